// The region mappings and the parallel Linear/Embedding layers against the
// unsplit layers: outputs and all gradients (weight shards gathered) within
// kTpRtol/kTpAtol, for groups of 2 and 4 ranks as threads; and the errors for
// sizes a group does not divide.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "paisoar/tensor_parallel.h"
#include "tests/support/thread_ranks.h"
#include "tests/tensor_parallel/tp_testing.h"

namespace paisoar::tensor_parallel {
namespace {

using paisoar::testing::expect_error_naming;
using paisoar::testing::expect_tp_close;
using paisoar::testing::run_ranks;

class TpWorld : public ::testing::TestWithParam<int> {};

TEST_P(TpWorld, MappingsAreEachOthersAdjoints) {
  const int world = GetParam();
  run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> group) {
    const float me = static_cast<float>(rank + 1);
    const float sum = world * (world + 1) / 2.0f;

    auto x = torch::full({2, 3}, me, torch::requires_grad());
    auto y = copy_to_region(x, group);
    expect_tp_close(y, torch::full({2, 3}, me), "copy_to_region forward");
    y.backward(torch::full({2, 3}, me));
    expect_tp_close(x.grad(), torch::full({2, 3}, sum), "copy_to_region backward (sum of gradients)");

    x = torch::full({2, 3}, me, torch::requires_grad());
    y = reduce_from_region(x, group);
    expect_tp_close(y, torch::full({2, 3}, sum), "reduce_from_region forward");
    y.backward(torch::full({2, 3}, 7.0f));
    expect_tp_close(x.grad(), torch::full({2, 3}, 7.0f), "reduce_from_region backward (identity)");

    // Rank r's slice of the last dimension holds r + 1.
    auto by_rank = torch::arange(1, world + 1, torch::kFloat).repeat_interleave(3).expand({2, 3 * world});
    x = torch::full({2, 3}, me, torch::requires_grad());
    y = gather_from_region(x, group);
    expect_tp_close(y, by_rank, "gather_from_region forward");
    auto g = torch::arange(6 * world, torch::kFloat).view({2, 3 * world});
    y.backward(g);
    expect_tp_close(x.grad(), g.narrow(1, 3 * rank, 3), "gather_from_region backward (this rank's slice)");

    x = g.clone().requires_grad_();
    y = scatter_to_region(x, group);
    expect_tp_close(y, g.narrow(1, 3 * rank, 3), "scatter_to_region forward");
    y.backward(torch::full({2, 3}, me));
    expect_tp_close(x.grad(), by_rank, "scatter_to_region backward (gathered gradients)");
  });
}

TEST_P(TpWorld, ColumnParallelLinearGatheredMatchesLinear) {
  const int world = GetParam();
  torch::manual_seed(1);
  torch::nn::Linear full(8, 12);
  auto x = torch::randn({3, 5, 8});
  auto upstream = torch::randn({3, 5, 12});
  auto xr = x.clone().requires_grad_();
  auto want = full(xr);
  (want * upstream).sum().backward();

  run_ranks(world, [&](int, std::shared_ptr<comm::Communicator> group) {
    ColumnParallelLinear layer(8, 12, group);
    layer->load_full(full);
    auto xi = x.clone().requires_grad_();
    auto y = layer(xi);
    expect_tp_close(y, want.detach(), "output");
    (y * upstream).sum().backward();
    expect_tp_close(xi.grad(), xr.grad(), "input gradient");
    expect_tp_close(gather_shards(layer->weight.grad(), 0, *group), full->weight.grad(), "weight gradient");
    expect_tp_close(gather_shards(layer->bias.grad(), 0, *group), full->bias.grad(), "bias gradient");
  });
}

TEST_P(TpWorld, ColumnParallelLinearFusedPartsKeepsEachPartsSlice) {
  const int world = GetParam();
  torch::manual_seed(2);
  torch::nn::Linear full(8, 3 * 8);  // q, k, v
  auto x = torch::randn({4, 8});
  auto upstream = torch::randn({4, 24});
  auto xr = x.clone().requires_grad_();
  auto want = full(xr);
  (want * upstream).sum().backward();

  run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> group) {
    ColumnParallelLinearOptions options;
    options.gather_output = false;
    options.fused_parts = 3;
    ColumnParallelLinear layer(8, 24, group, options);
    layer->load_full(full);
    auto xi = x.clone().requires_grad_();
    auto y = layer(xi);
    ASSERT_EQ(y.size(1), 24 / world);
    expect_tp_close(y, shard_of(want.detach(), 1, rank, world, 3), "this rank's output columns");
    expect_tp_close(gather_shards(y.detach(), 1, *group, 3), want.detach(), "gathered output");
    (y * shard_of(upstream, 1, rank, world, 3)).sum().backward();
    expect_tp_close(xi.grad(), xr.grad(), "input gradient");
    expect_tp_close(gather_shards(layer->weight.grad(), 0, *group, 3), full->weight.grad(), "weight gradient");
    expect_tp_close(gather_shards(layer->bias.grad(), 0, *group, 3), full->bias.grad(), "bias gradient");
  });
}

TEST_P(TpWorld, RowParallelLinearMatchesLinear) {
  const int world = GetParam();
  torch::manual_seed(3);
  torch::nn::Linear full(12, 8);
  auto x = torch::randn({3, 5, 12});
  auto upstream = torch::randn({3, 5, 8});
  auto xr = x.clone().requires_grad_();
  auto want = full(xr);
  (want * upstream).sum().backward();

  for (bool input_is_parallel : {false, true}) {
    SCOPED_TRACE(input_is_parallel ? "input_is_parallel" : "replicated input");
    run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> group) {
      RowParallelLinearOptions options;
      options.input_is_parallel = input_is_parallel;
      RowParallelLinear layer(12, 8, group, options);
      layer->load_full(full);
      auto xi = (input_is_parallel ? shard_of(x, 2, rank, world) : x.clone()).requires_grad_();
      auto y = layer(xi);
      expect_tp_close(y, want.detach(), "output");
      (y * upstream).sum().backward();
      expect_tp_close(xi.grad(), input_is_parallel ? shard_of(xr.grad(), 2, rank, world) : xr.grad(),
                      "input gradient");
      expect_tp_close(gather_shards(layer->weight.grad(), 1, *group), full->weight.grad(), "weight gradient");
      expect_tp_close(layer->bias.grad(), full->bias.grad(), "bias gradient (added once, after the sum)");
    });
  }
}

TEST_P(TpWorld, VocabParallelEmbeddingMatchesEmbedding) {
  const int world = GetParam();
  torch::manual_seed(4);
  torch::nn::Embedding full(16, 6);
  auto ids = torch::randint(0, 16, {3, 7}, torch::kLong);
  auto upstream = torch::randn({3, 7, 6});
  auto want = full(ids);
  (want * upstream).sum().backward();

  run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> group) {
    VocabParallelEmbedding layer(16, 6, group);
    layer->load_full(full);
    EXPECT_EQ(layer->vocab_begin(), rank * 16 / world);
    auto y = layer(ids);
    expect_tp_close(y, want.detach(), "output");
    (y * upstream).sum().backward();
    expect_tp_close(gather_shards(layer->weight.grad(), 0, *group), full->weight.grad(), "weight gradient");
    expect_error_naming([&] { layer(torch::tensor({0, 16}, torch::kLong)); }, {"id 16", "[0, 16)"});
  });
}

INSTANTIATE_TEST_SUITE_P(Groups, TpWorld, ::testing::Values(2, 4));

TEST(TensorParallelErrors, SizesTheGroupDoesNotDivideAreNamed) {
  run_ranks(4, [](int, std::shared_ptr<comm::Communicator> group) {
    expect_error_naming([&] { (void)ColumnParallelLinear(8, 10, group); },
                        {"ColumnParallelLinear", "out_features (10)", "group size (4)"});
    ColumnParallelLinearOptions fused;
    fused.fused_parts = 3;
    expect_error_naming([&] { (void)ColumnParallelLinear(8, 3 * 6, group, fused); },
                        {"out_features per fused part (6)", "group size (4)"});
    expect_error_naming([&] { (void)RowParallelLinear(6, 8, group); },
                        {"RowParallelLinear", "in_features (6)", "group size (4)"});
    expect_error_naming([&] { (void)VocabParallelEmbedding(10, 4, group); },
                        {"VocabParallelEmbedding", "num_embeddings (10)", "group size (4)"});
    models::GptOptions gpt;
    gpt.n_embd = 12;
    gpt.n_head = 6;
    expect_error_naming([&] { (void)ParallelCausalSelfAttention(gpt, group); },
                        {"ParallelCausalSelfAttention", "n_head (6)", "group size (4)"});
    expect_error_naming([&] { scatter_to_region(torch::zeros({2, 6}), group); },
                        {"last dimension (6)", "group size (4)"});
    // A full layer of the wrong shape is refused, not sliced.
    ColumnParallelLinear layer(8, 12, group);
    expect_error_naming([&] { layer->load_full(torch::nn::Linear(8, 16)); }, {"8 -> 16", "8 -> 12"});
  });
}

}  // namespace
}  // namespace paisoar::tensor_parallel
