// What a checkpoint records to join or cut tensor-parallel shards: the
// parameters each parallel layer splits (parameter_splits), checked against
// the full model a ParallelGpt was loaded from (each rank's shards gathered
// by the recorded split equal the full parameter; the others are whole), and
// join_shards as shard_of's inverse for every dimension and fused parts.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "paisoar/hybrid/replicated_parameters.h"
#include "paisoar/models/gpt.h"
#include "paisoar/tensor_parallel/parallel_gpt.h"
#include "tests/support/thread_ranks.h"
#include "tests/tensor_parallel/tp_testing.h"

namespace paisoar::tensor_parallel {
namespace {

using paisoar::testing::run_ranks;

TEST(ParameterSplits, JoinShardsUndoesShardOf) {
  torch::manual_seed(3);
  const torch::Tensor full = torch::randn({12, 12});
  for (int size : {1, 2, 3}) {
    for (const ParameterSplit split : {ParameterSplit{0, 1}, ParameterSplit{1, 1}, ParameterSplit{0, 2},
                                       ParameterSplit{1, 2}}) {
      std::vector<torch::Tensor> shards;
      for (int r = 0; r < size; ++r) shards.push_back(shard_of(full, split.dim, r, size, split.parts));
      EXPECT_TRUE(torch::equal(join_shards(shards, split.dim, split.parts), full))
          << "size " << size << ", dim " << split.dim << ", parts " << split.parts;
    }
  }
}

TEST(ParameterSplits, TextRoundTripsAndDamageIsNamed) {
  EXPECT_EQ(split_text({0, 1}), "0");
  EXPECT_EQ(split_text({1, 3}), "1/3");
  EXPECT_EQ(parse_split("1/3", "key"), (ParameterSplit{1, 3}));
  EXPECT_EQ(parse_split("0", "key"), (ParameterSplit{0, 1}));
  for (const char* bad : {"", "-1", "x", "1/0", "1/", "99999999"}) {
    paisoar::testing::expect_error_naming([&] { parse_split(bad, "metadata 'tensor.split.w'"); },
                                          {"metadata 'tensor.split.w'", "not a split"});
  }
}

class SplitsOfGpt : public ::testing::TestWithParam<int> {};

TEST_P(SplitsOfGpt, GatheredBySplitEveryParameterIsTheFullOne) {
  const models::GptOptions o = paisoar::testing::small_gpt_options();
  torch::manual_seed(7);
  models::Gpt full(o);
  const auto full_params = full->named_parameters();
  run_ranks(GetParam(), [&](int, std::shared_ptr<comm::Communicator> group) {
    ParallelGpt model(o, group);
    model->load_full(*full);
    const auto splits = parameter_splits(*model);
    EXPECT_EQ(splits.at("transformer.h.0.attn.c_attn.weight"), (ParameterSplit{0, 3}));  // q, k, v fused
    EXPECT_EQ(splits.at("transformer.h.0.attn.c_proj.weight"), (ParameterSplit{1, 1}));
    EXPECT_FALSE(splits.count("transformer.h.0.attn.c_proj.bias"));  // whole on every rank
    size_t split_count = 0;
    for (const auto& p : model->named_parameters()) {
      const auto it = splits.find(p.key());
      torch::Tensor whole = p.value().detach();
      if (it != splits.end()) {
        ++split_count;
        whole = gather_shards(whole, it->second.dim, *group, it->second.parts);
      }
      EXPECT_TRUE(torch::equal(whole, full_params[p.key()].detach())) << p.key();
    }
    // The parameters counted once by a gradient norm are exactly the others.
    EXPECT_EQ(hybrid::tensor_replicated_parameters(*model).size(), model->parameters().size() - split_count);
  });
}

INSTANTIATE_TEST_SUITE_P(Groups, SplitsOfGpt, ::testing::Values(2, 4));

}  // namespace
}  // namespace paisoar::tensor_parallel
