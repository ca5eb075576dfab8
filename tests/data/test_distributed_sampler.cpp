// DistributedSampler against torch.utils.data.DistributedSampler's output
// (values printed by PyTorch 1.13 for the same arguments), and its coverage.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "paisoar/data/distributed_sampler.h"

using paisoar::data::DistributedSampler;
using paisoar::data::SamplerOptions;

namespace {

SamplerOptions opts(int64_t rank, int64_t world, bool shuffle, uint64_t seed, bool drop_last = false) {
  SamplerOptions o;
  o.rank = rank;
  o.world_size = world;
  o.shuffle = shuffle;
  o.seed = seed;
  o.drop_last = drop_last;
  return o;
}

using V = std::vector<int64_t>;

}  // namespace

TEST(DistributedSampler, MatchesPyTorchOrder) {
  // DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=True, seed=7).set_epoch(e)
  const V expected[2][3] = {{{5, 4, 9, 2}, {0, 1, 6, 5}, {3, 7, 8, 0}},
                            {{7, 1, 9, 0}, {4, 3, 8, 7}, {6, 5, 2, 4}}};
  const int64_t epochs[2] = {0, 3};
  for (int e = 0; e < 2; ++e) {
    for (int64_t r = 0; r < 3; ++r) {
      EXPECT_EQ(DistributedSampler(10, opts(r, 3, true, 7)).indices(epochs[e]), expected[e][r])
          << "epoch " << epochs[e] << " rank " << r;
    }
  }
  EXPECT_EQ(DistributedSampler(10, opts(2, 3, false, 0, true)).indices(0), (V{2, 5, 8}));
  EXPECT_EQ(DistributedSampler(2, opts(4, 5, false, 0)).indices(0), (V{0}));  // padding wraps
}

TEST(DistributedSampler, RanksCoverEveryIndexOnceAndPadEvenly) {
  for (int64_t world : {1, 2, 3, 4, 7}) {
    std::multiset<int64_t> seen;
    for (int64_t r = 0; r < world; ++r) {
      DistributedSampler s(23, opts(r, world, true, 1));
      const auto idx = s.indices(5);
      EXPECT_EQ(static_cast<int64_t>(idx.size()), (23 + world - 1) / world);
      seen.insert(idx.begin(), idx.end());
    }
    for (int64_t i = 0; i < 23; ++i) EXPECT_GE(seen.count(i), 1u) << i;
    EXPECT_EQ(static_cast<int64_t>(seen.size()), ((23 + world - 1) / world) * world);
  }
}

TEST(DistributedSampler, ReshufflesPerEpochAndRejectsBadRanks) {
  DistributedSampler s(100, opts(0, 1, true, 3));
  EXPECT_NE(s.indices(0), s.indices(1));
  EXPECT_EQ(s.indices(1), s.indices(1));
  EXPECT_THROW(DistributedSampler(10, opts(2, 2, true, 0)), c10::ValueError);
  EXPECT_THROW(DistributedSampler(0, opts(0, 1, true, 0)), c10::ValueError);
  EXPECT_THROW(DistributedSampler(2, opts(0, 4, true, 0, true)), c10::ValueError);
}
