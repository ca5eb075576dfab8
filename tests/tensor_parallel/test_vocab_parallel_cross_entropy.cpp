// vocab_parallel_cross_entropy on 1, 2 and 4 ranks as threads equals
// torch's cross_entropy on the full logits: the loss and the gradient of each
// rank's logits shard (reductions mean, sum and none; 2-D and 3-D; an
// ignore_index; bf16 logits), ParallelGpt trained through it equals
// models::Gpt, and bad inputs throw the same clear error on every rank.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "paisoar/models/gpt.h"
#include "paisoar/tensor_parallel/parallel_gpt.h"
#include "paisoar/tensor_parallel/vocab_parallel_cross_entropy.h"
#include "tests/support/thread_ranks.h"
#include "tests/tensor_parallel/tp_testing.h"

namespace paisoar::tensor_parallel {
namespace {

namespace F = torch::nn::functional;
using paisoar::testing::expect_close;
using paisoar::testing::expect_error_naming;
using paisoar::testing::expect_tp_close;
using paisoar::testing::full_gradient;
using paisoar::testing::run_ranks;

// fp32: the loss differs from torch's only by the order in which exp() of the
// shards is summed (a few ulps of a value near log V).
constexpr double kRtol = 1e-6;
constexpr double kAtol = 1e-7;
// bf16 logits: the loss is computed in fp32 from the same bf16 values, so it
// matches torch on those values upcast; the gradient is rounded to bf16
// (relative error up to 2^-9).
constexpr double kBf16GradRtol = 1.0 / 256;
constexpr double kBf16GradAtol = 1e-6;

struct Reference {
  torch::Tensor loss, grad;  // grad: of the full logits
};

// torch's cross_entropy over the last dimension of `full`, backward with
// `grad_out` (the same shape as the loss).
Reference torch_cross_entropy(const torch::Tensor& full, const torch::Tensor& targets,
                              const VocabParallelCrossEntropyOptions& options, const torch::Tensor& grad_out) {
  auto logits = full.detach().to(torch::kFloat).requires_grad_();
  const int64_t V = full.size(-1);
  auto f = F::CrossEntropyFuncOptions().ignore_index(options.ignore_index);
  if (options.reduction == at::Reduction::None) f.reduction(torch::kNone);
  if (options.reduction == at::Reduction::Sum) f.reduction(torch::kSum);
  auto loss = F::cross_entropy(logits.reshape({-1, V}), targets.reshape({-1}), f);
  if (options.reduction == at::Reduction::None) loss = loss.view(targets.sizes());
  loss.backward(grad_out);
  return {loss.detach(), logits.grad()};
}

torch::Tensor upstream_gradient(const VocabParallelCrossEntropyOptions& options, const torch::Tensor& targets) {
  // Not 1, so a backward that ignored grad_out would fail.
  if (options.reduction == at::Reduction::None) return torch::rand(targets.sizes()) + 0.5;
  return torch::tensor(1.7f);
}

// On `world` ranks: each takes its shard of `full`, the loss and the shard's
// gradient must equal the reference's (its columns of the gradient).
void expect_matches_torch(int world, const torch::Tensor& full, const torch::Tensor& targets,
                          const VocabParallelCrossEntropyOptions& options, double grad_rtol, double grad_atol) {
  const auto grad_out = upstream_gradient(options, targets);
  const Reference want = torch_cross_entropy(full, targets, options, grad_out);
  const int64_t width = full.size(-1) / world;
  run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> group) {
    auto shard = full.narrow(-1, rank * width, width).clone().requires_grad_();
    auto loss = vocab_parallel_cross_entropy(shard, targets, group, options);
    EXPECT_EQ(loss.scalar_type(), torch::kFloat);
    expect_close(loss.detach(), want.loss, kRtol, kAtol, "loss");
    loss.backward(grad_out);
    ASSERT_EQ(shard.grad().scalar_type(), full.scalar_type());
    expect_close(shard.grad().to(torch::kFloat), want.grad.narrow(-1, rank * width, width), grad_rtol, grad_atol,
                 "gradient of the logits shard");
  });
}

class VocabParallelCe : public ::testing::TestWithParam<int> {};

TEST_P(VocabParallelCe, MatchesTorch2DForEveryReduction) {
  torch::manual_seed(1);
  auto full = torch::randn({13, 64}) * 3;
  auto targets = torch::randint(0, 64, {13}, torch::kLong);
  for (auto reduction : {at::Reduction::Mean, at::Reduction::Sum, at::Reduction::None}) {
    SCOPED_TRACE("reduction " + std::to_string(static_cast<int>(reduction)));
    VocabParallelCrossEntropyOptions options;
    options.reduction = reduction;
    expect_matches_torch(GetParam(), full, targets, options, kRtol, kAtol);
  }
}

TEST_P(VocabParallelCe, MatchesTorch3DWithIgnoreIndex) {
  torch::manual_seed(2);
  auto full = torch::randn({2, 5, 32}) * 3;
  auto targets = torch::randint(0, 32, {2, 5}, torch::kLong);
  targets[0][1] = -100;
  targets[1][4] = -100;
  targets[1][0] = 3;
  for (auto reduction : {at::Reduction::Mean, at::Reduction::None}) {
    SCOPED_TRACE("reduction " + std::to_string(static_cast<int>(reduction)));
    VocabParallelCrossEntropyOptions options;
    options.reduction = reduction;
    expect_matches_torch(GetParam(), full, targets, options, kRtol, kAtol);
    // An ignore_index inside the vocabulary: id 3 is ignored, -100 is then out of range.
    options.ignore_index = 3;
    expect_matches_torch(GetParam(), full, targets.masked_fill(targets.eq(-100), 7), options, kRtol, kAtol);
  }
}

TEST_P(VocabParallelCe, EveryTargetIgnoredIsNanMeanAndZeroGradientAsTorch) {
  auto targets = torch::full({4}, -100, torch::kLong);
  run_ranks(GetParam(), [&](int, std::shared_ptr<comm::Communicator> group) {
    auto shard = torch::randn({4, 8}).requires_grad_();
    auto loss = vocab_parallel_cross_entropy(shard, targets, group);
    EXPECT_TRUE(std::isnan(loss.item<float>()));
    loss.backward();
    EXPECT_TRUE(shard.grad().eq(0).all().item<bool>());
  });
}

TEST_P(VocabParallelCe, Bf16LogitsComputeInFp32) {
  torch::manual_seed(3);
  auto full = (torch::randn({3, 4, 64}) * 3).to(torch::kBFloat16);
  auto targets = torch::randint(0, 64, {3, 4}, torch::kLong);
  expect_matches_torch(GetParam(), full, targets, {}, kBf16GradRtol, kBf16GradAtol);
}

TEST_P(VocabParallelCe, ParallelGptWithVocabParallelLossMatchesGpt) {
  const models::GptOptions o = paisoar::testing::small_gpt_options();
  torch::manual_seed(7);
  models::Gpt full(o);
  auto idx = torch::randint(0, 32, {2, 6}, torch::kLong);
  auto targets = torch::randint(0, 32, {2, 6}, torch::kLong);
  targets[1][5] = -1;  // Gpt::loss ignores -1
  auto want_logits = full(idx);
  auto want_loss = models::GptImpl::loss(want_logits, targets);
  want_loss.backward();
  const auto full_params = full->named_parameters();
  const int world = GetParam();
  const int64_t width = o.vocab_size / world;

  run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> group) {
    ParallelGpt model(o, group);
    model->load_full(*full);
    auto logits_shard = model->forward_logits_shard(idx);
    expect_tp_close(logits_shard, want_logits.detach().narrow(-1, rank * width, width), "logits shard");
    VocabParallelCrossEntropyOptions options;
    options.ignore_index = -1;
    auto loss = vocab_parallel_cross_entropy(logits_shard, targets, group, options);
    expect_tp_close(loss, want_loss.detach(), "loss");
    loss.backward();
    const auto params = model->named_parameters();
    ASSERT_EQ(params.size(), full_params.size());
    for (const auto& p : full_params) {
      ASSERT_TRUE(params.contains(p.key())) << p.key();
      expect_tp_close(full_gradient(p.key(), params[p.key()].grad(), *group), p.value().grad(),
                      "gradient of " + p.key());
    }
  });
}

// Each error is thrown on every rank before any collective; the call after
// them succeeds on every rank, so none was left inside a collective.
TEST_P(VocabParallelCe, BadInputsThrowTheSameErrorOnEveryRank) {
  const int world = GetParam();
  const int64_t V = 32, width = V / world;
  torch::manual_seed(4);
  auto full = torch::randn({6, V});
  auto targets = torch::randint(0, V, {6}, torch::kLong);
  run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> group) {
    auto shard = full.narrow(-1, rank * width, width).clone();
    auto with = [&](int64_t row, int64_t id) {
      auto t = targets.clone();
      t[row] = id;
      return t;
    };
    expect_error_naming([&] { vocab_parallel_cross_entropy(shard, with(2, 40), group); },
                        {"target id 40", "[0, 32)"});
    expect_error_naming([&] { vocab_parallel_cross_entropy(shard, with(0, -5), group); },
                        {"target id -5", "[0, 32)", "ignore_index (-100)"});
    expect_error_naming([&] { vocab_parallel_cross_entropy(shard, targets.to(torch::kInt), group); },
                        {"int64", "Int"});
    expect_error_naming([&] { vocab_parallel_cross_entropy(shard, targets.narrow(0, 0, 5), group); },
                        {"leading dimensions", "[6, " + std::to_string(width) + "]", "[5]"});
    expect_error_naming([&] { vocab_parallel_cross_entropy(shard.to(torch::kLong), targets, group); },
                        {"floating point", "Long"});
    expect_error_naming([&] { vocab_parallel_cross_entropy(shard, targets, nullptr); }, {"group is null"});
    auto loss = vocab_parallel_cross_entropy(shard, targets, group);
    expect_close(loss, F::cross_entropy(full, targets), kRtol, kAtol, "loss after the errors");
  });
}

INSTANTIATE_TEST_SUITE_P(Groups, VocabParallelCe, ::testing::Values(1, 2, 4));

}  // namespace
}  // namespace paisoar::tensor_parallel
