// SyncBatchNorm on 2 and 3 thread ranks, uneven per-rank batches included,
// against one BatchNorm2d over the concatenated batch: outputs, input
// gradients, summed weight/bias gradients and running statistics agree
// within 1e-5 (fp64 statistics against BatchNorm's fp32).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>

#include "paisoar/ddp/sync_batch_norm.h"
#include "tests/support/thread_ranks.h"

using namespace paisoar;

namespace {

void expect_sync_bn_matches_batch_norm(std::vector<int64_t> batches) {
  const int world = static_cast<int>(batches.size());
  torch::manual_seed(11);
  std::vector<torch::Tensor> xs, gs;
  for (auto b : batches) {
    xs.push_back(torch::randn({b, 3, 4, 4}) * 2 + 1);
    gs.push_back(torch::randn({b, 3, 4, 4}));
  }
  // Reference: one BatchNorm over everything, loss = sum of out * g.
  torch::nn::BatchNorm2d bn(3);
  bn->weight.data().uniform_(0.5, 1.5);
  bn->bias.data().uniform_(-0.5, 0.5);
  auto x_all = torch::cat(xs).requires_grad_();
  auto out_all = bn(x_all);
  (out_all * torch::cat(gs)).sum().backward();

  std::mutex mutex;
  torch::Tensor weight_grad = torch::zeros({3}), bias_grad = torch::zeros({3});
  paisoar::testing::run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    ddp::SyncBatchNorm sbn(3, comm);
    {
      torch::NoGradGuard no_grad;
      sbn->weight.copy_(bn->weight.detach());
      sbn->bias.copy_(bn->bias.detach());
    }
    auto x = xs[rank].clone().requires_grad_();
    auto out = sbn(x);
    (out * gs[rank]).sum().backward();
    int64_t start = 0;
    for (int r = 0; r < rank; ++r) start += batches[r];
    EXPECT_TRUE(torch::allclose(out, out_all.narrow(0, start, batches[rank]), 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(x.grad(), x_all.grad().narrow(0, start, batches[rank]), 1e-5, 1e-5));
    EXPECT_TRUE(torch::allclose(sbn->running_mean, bn->running_mean, 1e-5, 1e-6));
    EXPECT_TRUE(torch::allclose(sbn->running_var, bn->running_var, 1e-5, 1e-6));
    std::lock_guard<std::mutex> lock(mutex);
    weight_grad += sbn->weight.grad();
    bias_grad += sbn->bias.grad();
  });
  EXPECT_TRUE(torch::allclose(weight_grad, bn->weight.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(bias_grad, bn->bias.grad(), 1e-5, 1e-5));
}

TEST(SyncBatchNorm, TwoRanksMatchOneBatchNorm) { expect_sync_bn_matches_batch_norm({4, 4}); }

TEST(SyncBatchNorm, UnevenBatchesIncludingAnEmptyRank) {
  expect_sync_bn_matches_batch_norm({5, 2, 0});
}

TEST(SyncBatchNorm, EvalUsesRunningStatsWithoutCommunication) {
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    ddp::SyncBatchNorm sbn(3, comm);
    sbn->eval();
    auto x = torch::randn({rank + 1, 3, 2, 2});  // ranks do different things: no collective
    EXPECT_TRUE(torch::allclose(sbn(x), x / std::sqrt(1 + 1e-5), 1e-6, 1e-6));
  });
}

TEST(SyncBatchNorm, WrongChannelCountSaysWhatItExpected) {
  paisoar::testing::run_ranks(1, [&](int, std::shared_ptr<comm::Communicator> comm) {
    ddp::SyncBatchNorm sbn(3, comm);
    try {
      sbn(torch::randn({2, 4, 2, 2}));
      FAIL();
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("expected input [N, 3, ...], got [2, 4, 2, 2]"),
                std::string::npos)
          << e.what();
    }
  });
}

}  // namespace
