// ParallelMlp, ParallelCausalSelfAttention and ParallelGptBlock built from a
// models:: GPT layer equal it: output, input gradient and every parameter's
// gradient (shards gathered) within kTpRtol/kTpAtol, for groups of 2 and 4.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "paisoar/comm/device_mesh.h"
#include "paisoar/models/gpt.h"
#include "paisoar/tensor_parallel.h"
#include "tests/support/thread_ranks.h"
#include "tests/tensor_parallel/tp_testing.h"

namespace paisoar::tensor_parallel {
namespace {

using paisoar::testing::expect_tp_close;
using paisoar::testing::full_gradient;
using paisoar::testing::run_ranks;

models::GptOptions small_gpt() {
  models::GptOptions o;
  o.n_embd = 16;
  o.n_head = 4;
  o.block_size = 8;
  o.dropout = 0.0;
  return o;
}

// Runs `full` once on the main thread, then on `world` ranks the parallel
// module that make_parallel builds (and loads from `full`), comparing.
template <typename Full, typename MakeParallel>
void expect_matches(int world, Full full, MakeParallel make_parallel) {
  torch::manual_seed(5);
  {
    // Non-trivial LayerNorm parameters, so their gradients are checked.
    torch::NoGradGuard no_grad;
    for (auto& p : full->parameters()) p.add_(torch::randn_like(p) * 0.1);
  }
  auto x = torch::randn({2, 6, 16});
  auto upstream = torch::randn({2, 6, 16});
  auto xr = x.clone().requires_grad_();
  auto want = full->forward(xr);
  (want * upstream).sum().backward();
  const auto full_params = full->named_parameters();

  run_ranks(world, [&](int, std::shared_ptr<comm::Communicator> group) {
    auto parallel = make_parallel(group);
    parallel->load_full(*full);
    auto xi = x.clone().requires_grad_();
    auto y = parallel->forward(xi);
    expect_tp_close(y, want.detach(), "output");
    (y * upstream).sum().backward();
    expect_tp_close(xi.grad(), xr.grad(), "input gradient");
    const auto params = parallel->named_parameters();
    ASSERT_EQ(params.size(), full_params.size());
    for (const auto& p : full_params) {
      ASSERT_TRUE(params.contains(p.key())) << p.key();
      expect_tp_close(full_gradient(p.key(), params[p.key()].grad(), *group), p.value().grad(),
                      "gradient of " + p.key());
    }
  });
}

class TpBlocks : public ::testing::TestWithParam<int> {};

TEST_P(TpBlocks, ParallelMlpMatchesGptMlp) {
  expect_matches(GetParam(), models::GptMlp(small_gpt()),
                 [](Group g) { return ParallelMlp(small_gpt(), std::move(g)); });
}

TEST_P(TpBlocks, ParallelAttentionMatchesCausalSelfAttention) {
  expect_matches(GetParam(), models::CausalSelfAttention(small_gpt()),
                 [](Group g) { return ParallelCausalSelfAttention(small_gpt(), std::move(g)); });
}

TEST_P(TpBlocks, ParallelGptBlockMatchesGptBlock) {
  expect_matches(GetParam(), models::GptBlock(small_gpt()),
                 [](Group g) { return ParallelGptBlock(small_gpt(), std::move(g)); });
}

TEST_P(TpBlocks, ParallelGptBlockWithoutBiasMatches) {
  auto options = small_gpt();
  options.bias = false;
  expect_matches(GetParam(), models::GptBlock(options),
                 [options](Group g) { return ParallelGptBlock(options, std::move(g)); });
}

INSTANTIATE_TEST_SUITE_P(Groups, TpBlocks, ::testing::Values(2, 4));

// The group is a subgroup: the "tensor" dimension of a 2 x 2 mesh, each data
// row feeding its own input through the same block.
TEST(TpMesh, ParallelGptBlockOverTheTensorGroupOfA2x2Mesh) {
  const auto options = small_gpt();
  torch::manual_seed(6);
  models::GptBlock full(options);
  auto upstream = torch::randn({2, 6, 16});
  std::vector<torch::Tensor> xs, wants, x_grads;
  for (int row = 0; row < 2; ++row) {
    auto x = torch::randn({2, 6, 16}).requires_grad_();
    auto y = full->forward(x);
    (y * upstream).sum().backward();
    xs.push_back(x.detach());
    wants.push_back(y.detach());
    x_grads.push_back(x.grad());
  }
  run_ranks(4, [&](int, std::shared_ptr<comm::Communicator> world) {
    comm::DeviceMesh mesh(world, {2, 2}, {"data", "tensor"});
    auto group = mesh.group("tensor");
    ASSERT_EQ(group->size(), 2);
    ParallelGptBlock block(options, group);
    block->load_full(*full);
    const int row = mesh.coordinate()[0];
    auto xi = xs[row].clone().requires_grad_();
    auto y = block(xi);
    expect_tp_close(y, wants[row], "output of data row " + std::to_string(row));
    (y * upstream).sum().backward();
    expect_tp_close(xi.grad(), x_grads[row], "input gradient of data row " + std::to_string(row));
  });
}

}  // namespace
}  // namespace paisoar::tensor_parallel
