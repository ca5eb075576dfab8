// ZeRO stages 1, 2 and 3 on 2 and 3 thread ranks give the same parameters
// after 3 steps as plain DDP, for SGD with momentum and AdamW, with and without
// the GradScaler, gradient accumulation and global-norm clipping. The model
// (186 parameters in units of 13-117) divides by neither 2 nor 3, so padding is
// exercised. Tolerance: rtol 1e-4, atol 1e-5 (fp32 sums in another order;
// Adam's g/sqrt(v) magnifies them where gradients are tiny).
#include <gtest/gtest.h>

#include <tuple>

#include "paisoar/amp.h"
#include "tests/zero/zero_harness.h"

using namespace paisoar;
using paisoar::testing::Recipe;

namespace {

constexpr double kRtol = 1e-4, kAtol = 1e-5;

struct Case {
  const char* name;
  Recipe recipe;
};

const Case kCases[] = {
    {"sgd", {false, false, 1, 0}},
    {"adamw", {true, false, 1, 0}},
    {"sgd_scaler_accumulation", {false, true, 2, 0}},
    {"adamw_scaler_accumulation", {true, true, 2, 0}},
    {"adamw_accumulation_clip", {true, false, 2, 0.05}},
    {"sgd_scaler_clip", {false, true, 1, 0.05}},
};

class ZeroMatchesDdp : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(ZeroMatchesDdp, AfterThreeSteps) {
  const auto [world, stage] = GetParam();
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.name);
    auto data = paisoar::testing::make_data(world, c.recipe);
    auto want = paisoar::testing::run_ddp(world, c.recipe, data);
    auto got = paisoar::testing::run_zero(world, stage, c.recipe, data);
    for (int r = 0; r < world; ++r) {
      SCOPED_TRACE("rank " + std::to_string(r));
      paisoar::testing::expect_close(got[r], want[0], kRtol, kAtol);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WorldsAndStages, ZeroMatchesDdp,
                         ::testing::Combine(::testing::Values(2, 3), ::testing::Values(1, 2, 3)),
                         [](const auto& info) {
                           return "world" + std::to_string(std::get<0>(info.param)) + "_stage" +
                                  std::to_string(std::get<1>(info.param));
                         });

// One rank: ZeRO is the plain optimizer (nothing sharded), for every stage.
TEST(ZeroSingleRank, MatchesThePlainOptimizer) {
  Recipe r;
  r.adamw = true;
  auto data = paisoar::testing::make_data(1, r);
  torch::manual_seed(100);
  auto net = paisoar::testing::make_net();
  auto opt = paisoar::testing::make_optimizer(r, net->parameters());
  for (const auto& step : data) {
    opt->zero_grad();
    torch::cross_entropy_loss(net->forward(step[0][0].x), step[0][0].y).backward();
    opt->step();
  }
  std::vector<torch::Tensor> want;
  for (const auto& p : net->parameters()) want.push_back(p.detach().clone());
  for (int stage = 1; stage <= 3; ++stage) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    auto got = paisoar::testing::run_zero(1, stage, r, data);
    paisoar::testing::expect_close(got[0], want, 1e-6, 1e-7);
  }
}

// The scaler's inf/NaN verdict is over all shards: an inf that lands in one
// rank's gradient shard makes every rank skip the step and back off the scale.
TEST(ZeroScaler, InfInOneShardSkipsTheStepOnEveryRank) {
  for (int stage = 1; stage <= 3; ++stage) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    std::mutex mutex;
    paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
      Recipe r;
      r.scaler = true;
      auto model = paisoar::testing::zero_model(paisoar::testing::rank_net(rank, mutex), stage);
      zero::ZeroOptimizer opt(model, comm, paisoar::testing::factory(r), paisoar::testing::zero_options(stage));
      auto scaler = paisoar::testing::make_scaler(r, comm);
      auto before = opt.full_parameters();
      opt.zero_grad();
      auto x = torch::ones({2, 8});
      scaler.scale(paisoar::testing::zero_forward(model, stage, x).sum()).backward();
      if (rank == 1) opt.shard().front().tensor.mutable_grad()[0] = std::numeric_limits<float>::infinity();
      EXPECT_FALSE(scaler.step(opt));
      scaler.update();
      EXPECT_EQ(scaler.get_scale(), 512.0);
      paisoar::testing::expect_close(opt.full_parameters(), before, 0, 0);
    });
  }
}

// clip_grad_norm_ over the shards reports the norm of the whole gradient.
TEST(ZeroClip, NormIsOverAllShards) {
  for (int stage = 1; stage <= 3; ++stage) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    std::mutex mutex;
    paisoar::testing::run_ranks(3, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
      Recipe r;
      auto model = paisoar::testing::zero_model(paisoar::testing::rank_net(rank, mutex), stage);
      zero::ZeroOptimizer opt(model, comm, paisoar::testing::factory(r), paisoar::testing::zero_options(stage));
      torch::Tensor x;
      {
        std::lock_guard<std::mutex> lock(mutex);
        torch::manual_seed(5);
        x = torch::randn({4, 8});
      }
      // The reference: the same (averaged = identical) gradient, unsharded.
      auto full = opt.full_parameters();
      auto net = paisoar::testing::make_net();
      {
        torch::NoGradGuard no_grad;
        for (size_t i = 0; i < full.size(); ++i) net->parameters()[i].copy_(full[i]);
      }
      net->forward(x).square().sum().backward();
      const double want = torch::nn::utils::clip_grad_norm_(net->parameters(), 1e30);
      opt.zero_grad();
      paisoar::testing::zero_forward(model, stage, x).square().sum().backward();
      EXPECT_NEAR(opt.clip_grad_norm_(1e30), want, 1e-5 * want);
    });
  }
}

}  // namespace

namespace {

// bf16 model, fp32 master weights: ZeRO (stages 1-3, 2 ranks, SGD) against
// DDP on the bf16 model with amp::MasterWeights. Both reduce bf16 gradients in
// fp32 and round once; tolerance rtol 1e-2, atol 1e-3 (bf16 rounding of the
// forward and of the gradients).
TEST(ZeroBf16, MasterWeightsMatchDdpWithMasterWeights) {
  Recipe r;  // SGD with momentum: unlike Adam, it is not blind to a wrongly scaled average
  auto data = paisoar::testing::make_data(2, r);
  std::mutex mutex;
  std::vector<torch::Tensor> want;
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto net = paisoar::testing::rank_net(rank, mutex);
    net->to(torch::kBFloat16);
    DistributedDataParallel<torch::nn::Sequential> ddp(net, comm);
    amp::MasterWeights master(net->parameters());
    auto opt = paisoar::testing::make_optimizer(r, master.params());
    for (const auto& step : data) {
      opt->zero_grad();
      net->zero_grad();
      torch::cross_entropy_loss(ddp(step[0][rank].x.to(torch::kBFloat16)).to(torch::kFloat), step[0][rank].y)
          .backward();
      master.copy_grads_to_master();
      opt->step();
      master.copy_master_to_model();
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (rank == 0) {
      for (const auto& p : master.params()) want.push_back(p.detach().clone());
    }
  });
  for (int stage = 1; stage <= 3; ++stage) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    std::vector<std::vector<torch::Tensor>> got(2);
    paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
      auto net = paisoar::testing::rank_net(rank, mutex);
      net->to(torch::kBFloat16);
      auto model = paisoar::testing::zero_model(net, stage);
      zero::ZeroOptimizer opt(model, comm, paisoar::testing::factory(r), paisoar::testing::zero_options(stage));
      for (const auto& step : data) {
        opt.zero_grad();
        torch::cross_entropy_loss(
            paisoar::testing::zero_forward(model, stage, step[0][rank].x.to(torch::kBFloat16)).to(torch::kFloat),
            step[0][rank].y)
            .backward();
        opt.step();
      }
      auto full = opt.full_parameters();
      std::lock_guard<std::mutex> lock(mutex);
      got[rank] = full;
    });
    for (int r2 = 0; r2 < 2; ++r2) paisoar::testing::expect_close(got[r2], want, 1e-2, 1e-3);
  }
}

}  // namespace
