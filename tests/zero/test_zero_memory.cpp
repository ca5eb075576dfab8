// Per-rank bytes of parameters, gradients and optimizer state, measured from
// the storages each rank holds after an AdamW step, against ZeRO's formulas
// (fp32 Adam: DDP 16 bytes/param; stage 1: 4+4+8/N; stage 2: 4+12/N;
// stage 3: 16/N) within 10%; and the shard layout's padding arithmetic.
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/support/expect_error.h"
#include "tests/zero/zero_harness.h"

using namespace paisoar;

namespace {

// 64 -> 256 -> 256 -> 10: 85,258 parameters, so padding and per-piece step
// counters are far below 10%.
torch::nn::Sequential big_net() {
  return torch::nn::Sequential(torch::nn::Linear(64, 256), torch::nn::Functional(torch::relu),
                               torch::nn::Linear(256, 256), torch::nn::Functional(torch::relu),
                               torch::nn::Linear(256, 10));
}

double per_param(int64_t bytes, int64_t params) { return static_cast<double>(bytes) / params; }

TEST(ZeroMemory, DdpHoldsSixteenBytesPerParameter) {
  torch::manual_seed(1);
  auto net = big_net();
  torch::optim::AdamW opt(net->parameters(), torch::optim::AdamWOptions(1e-3));
  net->forward(torch::randn({4, 64})).sum().backward();
  opt.step();
  int64_t n = 0;
  for (const auto& p : net->parameters()) n += p.numel();
  const auto m = zero::replicated_memory(net->parameters(), opt);
  EXPECT_NEAR(per_param(m.total(), n), 16.0, 1.6);
}

class ZeroMemoryStages : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(ZeroMemoryStages, MatchesTheFormula) {
  const auto [world, stage] = GetParam();
  const double N = world;
  const double formula = stage == 1 ? 4 + 4 + 8 / N : stage == 2 ? 4 + 12 / N : 16 / N;
  std::mutex mutex;
  paisoar::testing::run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    torch::nn::Sequential net;
    {
      std::lock_guard<std::mutex> lock(mutex);
      torch::manual_seed(1);
      net = big_net();
    }
    int64_t n = 0;
    for (const auto& p : net->parameters()) n += p.numel();
    auto model = paisoar::testing::zero_model(net, stage);
    zero::ZeroOptions o;
    o.stage = stage;
    o.warn_single_rank = false;
    zero::ZeroOptimizer opt(model, comm, [](const std::vector<zero::ShardParam>& shard) {
      return std::make_unique<torch::optim::AdamW>(zero::tensors_of(shard), torch::optim::AdamWOptions(1e-3));
    }, o);
    opt.zero_grad();
    paisoar::testing::zero_forward(model, stage, torch::randn({4, 64})).sum().backward();
    opt.step();
    const auto m = opt.memory();
    const double got = per_param(m.total(), n);
    if (rank == 0) {
      std::printf("[ zero mem ] world %d stage %d: %.3f bytes/param (params %.3f, grads %.3f, state %.3f), "
                  "formula %.3f\n", world, stage, got, per_param(m.params, n), per_param(m.grads, n),
                  per_param(m.optimizer_state, n), formula);
    }
    EXPECT_NEAR(got, formula, 0.1 * formula)
        << "params " << per_param(m.params, n) << " grads " << per_param(m.grads, n) << " state "
        << per_param(m.optimizer_state, n);
    EXPECT_NEAR(per_param(m.optimizer_state, n), 8 / N, 0.1 * 8 / N);
  });
}

INSTANTIATE_TEST_SUITE_P(WorldsAndStages, ZeroMemoryStages,
                         ::testing::Combine(::testing::Values(1, 2, 3), ::testing::Values(1, 2, 3)),
                         [](const auto& info) {
                           return "world" + std::to_string(std::get<0>(info.param)) + "_stage" +
                                  std::to_string(std::get<1>(info.param));
                         });

// A 1-rank ZeRO works and says it saves nothing.
TEST(ZeroSingleRank, SaysItSavesNothing) {
  paisoar::testing::run_ranks(1, [&](int, std::shared_ptr<comm::Communicator> comm) {
    auto net = big_net();
    zero::ZeroOptions o;
    o.stage = 2;
    ::testing::internal::CaptureStderr();
    zero::ZeroOptimizer opt(net.ptr(), comm, paisoar::testing::factory({}), o);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("saves no memory"), std::string::npos) << err;
  });
}

// Bad input: a stage out of range, a factory that ignores the shard.
TEST(ZeroErrors, BadStageAndForeignOptimizer) {
  paisoar::testing::run_ranks(1, [&](int, std::shared_ptr<comm::Communicator> comm) {
    auto net = big_net();
    zero::ZeroOptions o;
    o.stage = 4;
    paisoar::testing::expect_error([&] { zero::ZeroOptimizer(net.ptr(), comm, paisoar::testing::factory({}), o); },
                                   {"stage must be 1, 2 or 3", "got 4"});
    o.stage = 3;
    paisoar::testing::expect_error([&] { zero::ZeroOptimizer(net.ptr(), comm, paisoar::testing::factory({}), o); },
                                   {"LayerList"});
    o.stage = 1;
    o.warn_single_rank = false;
    auto other = big_net();
    paisoar::testing::expect_error(
        [&] {
          zero::ZeroOptimizer(net.ptr(), comm, [&](const std::vector<zero::ShardParam>&) {
            return std::make_unique<torch::optim::SGD>(other->parameters(), 0.1);
          }, o);
        },
        {"tensors_of(shard)"});
  });
}

TEST(ShardLayout, PadsEachUnitToTheWorldSize) {
  // Two units: {params 0, 1} = 5 + 3 = 8 elements, {param 2} = 4; 3 ranks.
  zero::ShardLayout layout({5, 3, 4}, {{0, 1}, {2}}, 3);
  EXPECT_EQ(layout.units()[0].padded, 9);
  EXPECT_EQ(layout.units()[0].chunk, 3);
  EXPECT_EQ(layout.units()[1].padded, 6);
  EXPECT_EQ(layout.shard_numel(), 5);
  EXPECT_EQ(layout.total_numel(), 12);
  // Rank 1 owns unit 0's elements [3, 6) = param 0's [3, 5) and param 1's [0, 1),
  // and unit 1's [2, 4) = param 2's [2, 4).
  auto pieces = layout.pieces(1);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].param, 0u);
  EXPECT_EQ(pieces[0].param_begin, 3);
  EXPECT_EQ(pieces[0].numel, 2);
  EXPECT_EQ(pieces[1].param, 1u);
  EXPECT_EQ(pieces[1].chunk_begin, 2);
  EXPECT_EQ(pieces[1].numel, 1);
  EXPECT_EQ(pieces[2].param_begin, 2);
  // Rank 2 owns unit 0's [6, 9): param 1's [1, 3) and one element of padding.
  auto last = layout.pieces(2);
  EXPECT_EQ(last[0].numel, 2);
  int64_t covered = 0;
  for (int r = 0; r < 3; ++r) {
    for (const auto& p : layout.pieces(r)) covered += p.numel;
  }
  EXPECT_EQ(covered, 12);
  EXPECT_THROW(zero::ShardLayout({1, 1}, {{0}}, 2), c10::ValueError);
  EXPECT_THROW(zero::ShardLayout({1}, {{0}}, 0), c10::ValueError);
}

}  // namespace
