// Joining a stage's tensor-parallel parts, on ShardSets built by hand: a
// column split with fused parts and its optimizer state joined as shard_of's
// inverse, and the parts refused with a message when they cannot be joined
// (written before splits were recorded, a frozen shard, optimizer state
// missing from one part).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "paisoar/tensor_parallel/sharding.h"
#include "src/state/tensor_split_state.h"
#include "tests/support/expect_error.h"

namespace paisoar::train {
namespace {

using zero::detail::ShardSet;

// Tensor rank `rank` of 2 of a part holding w (split 0/3) and b (whole).
ShardSet part(const torch::Tensor& w, const torch::Tensor& b, int rank) {
  ShardSet s;
  s.dir = "p0-t" + std::to_string(rank);
  s.metadata = split_metadata(torch::nn::Module());  // the marker
  s.metadata[std::string(kSplitKeyPrefix) + "w"] = "0/3";
  const torch::Tensor shard = tensor_parallel::shard_of(w, 0, rank, 2, 3);
  s.names = {"w", "b"};
  s.shapes = {{"w", shard.sizes().vec()}, {"b", b.sizes().vec()}};
  s.params = {{"w", shard.reshape({-1})}, {"b", b.reshape({-1})}};
  s.elementwise["w"]["exp_avg"] = (shard * 2).reshape({-1});
  s.scalars["w"]["step"] = torch::tensor(5.0);
  return s;
}

TEST(TensorSplitState, PartsJoinIntoTheWholeParameterAndItsState) {
  const torch::Tensor w = torch::arange(12 * 2, torch::kFloat).view({12, 2});
  const torch::Tensor b = torch::ones({2});
  const ShardSet joined = join_tensor_shards({part(w, b, 0), part(w, b, 1)});
  EXPECT_EQ(joined.shapes.at("w"), (std::vector<int64_t>{12, 2}));
  EXPECT_TRUE(torch::equal(joined.params.at("w").view({12, 2}), w));
  EXPECT_TRUE(torch::equal(joined.elementwise.at("w").at("exp_avg").view({12, 2}), w * 2));
  EXPECT_TRUE(torch::equal(joined.params.at("b"), b));
  EXPECT_EQ(joined.metadata.count(std::string(kSplitKeyPrefix) + "w"), 0u);  // whole now
  // And cut again for rank 1 of 2.
  ShardSet cut = joined;
  cut_tensor_shard(cut, {{"w", {0, 3}}}, 1, 2);
  EXPECT_TRUE(torch::equal(cut.params.at("w"), part(w, b, 1).params.at("w")));
  EXPECT_TRUE(torch::equal(cut.elementwise.at("w").at("exp_avg"), part(w, b, 1).elementwise.at("w").at("exp_avg")));
}

TEST(TensorSplitState, PartsThatCannotBeJoinedAreRefusedWithTheReason) {
  const torch::Tensor w = torch::ones({12, 2});
  const torch::Tensor b = torch::ones({2});
  ShardSet old0 = part(w, b, 0), old1 = part(w, b, 1);
  old0.metadata.erase(kSplitsRecordedKey);
  paisoar::testing::expect_error([&] { join_tensor_shards({old0, old1}); },
                                 {"p0-t0", "do not record which parameters are shards",
                                  "resume with the parallel: settings they were written with"});
  ShardSet frozen0 = part(w, b, 0), frozen1 = part(w, b, 1);
  frozen0.buffers["emb"] = torch::zeros({3});
  frozen0.metadata[std::string(kSplitKeyPrefix) + "emb"] = "0";
  paisoar::testing::expect_error([&] { join_tensor_shards({frozen0, frozen1}); },
                                 {"'emb', a frozen (requires_grad false) shard"});
  ShardSet lacking0 = part(w, b, 0), lacking1 = part(w, b, 1);
  lacking1.elementwise.clear();
  paisoar::testing::expect_error([&] { join_tensor_shards({lacking0, lacking1}); },
                                 {"p0-t1' lacks the optimizer's 'exp_avg' of 'w'"});
}

}  // namespace
}  // namespace paisoar::train
