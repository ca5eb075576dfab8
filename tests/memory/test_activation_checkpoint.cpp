// Activation checkpointing gives the same gradients as running without it:
// bit for bit without dropout, with dropout (RNG replay), under bf16 autocast
// (autocast replay), and under DDP with 2 thread ranks; the pattern policy
// wraps what it names; bad input gives errors naming the problem.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>

#include "paisoar/amp/autocast.h"
#include "paisoar/ddp.h"
#include "paisoar/memory.h"
#include "tests/memory/deep_mlp.h"
#include "tests/support/expect_error.h"
#include "tests/support/thread_ranks.h"

using namespace paisoar;
using paisoar::testing::deep_mlp;
using paisoar::testing::grads_of;
using paisoar::testing::zero_grads;

namespace {

void expect_equal(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(torch::equal(got[i], want[i]))
        << "tensor " << i << " max diff " << (got[i] - want[i]).abs().max().item<double>();
  }
}

struct Pass {
  torch::Tensor out, x_grad;
  std::vector<torch::Tensor> grads;
};

// One forward+backward of `run` on a fresh input that requires grad.
template <typename Run>
Pass pass(torch::nn::Module& params_of, const torch::Tensor& input, Run run) {
  zero_grads(params_of);
  auto x = input.clone().requires_grad_();
  Pass p;
  p.out = run(x);
  (p.out.to(torch::kFloat).square().sum()).backward();
  p.x_grad = x.grad().clone();
  p.grads = grads_of(params_of);
  return p;
}

TEST(Checkpoint, PolicyGivesBitIdenticalGradientsWithoutDropout) {
  torch::manual_seed(1);
  auto model = deep_mlp(4, 32);
  auto input = torch::randn({8, 32});
  auto plain = pass(*model, input, [&](const torch::Tensor& x) { return model->forward(x); });
  auto wrapped = memory::CheckpointPolicy({"1", "3"}).apply(model);
  auto ckpt = pass(*model, input, [&](const torch::Tensor& x) { return wrapped->forward(x); });
  EXPECT_TRUE(torch::equal(ckpt.out, plain.out));
  EXPECT_TRUE(torch::equal(ckpt.x_grad, plain.x_grad));
  expect_equal(ckpt.grads, plain.grads);
}

TEST(Checkpoint, DropoutMasksAreReplayed) {
  torch::manual_seed(2);
  auto model = deep_mlp(3, 32, /*dropout=*/0.5);
  auto input = torch::randn({8, 32});
  auto run_plain = [&](const torch::Tensor& x) { return model->forward(x); };
  auto wrapped = memory::CheckpointPolicy({"*"}).apply(model);
  auto run_ckpt = [&](const torch::Tensor& x) { return wrapped->forward(x); };

  torch::manual_seed(10);
  auto plain = pass(*model, input, run_plain);
  const auto next_plain = torch::rand({4});
  torch::manual_seed(10);
  auto ckpt = pass(*model, input, run_ckpt);
  const auto next_ckpt = torch::rand({4});
  EXPECT_TRUE(torch::equal(ckpt.out, plain.out));
  expect_equal(ckpt.grads, plain.grads);
  EXPECT_TRUE(torch::equal(ckpt.x_grad, plain.x_grad));
  // Replaying does not shift the random numbers drawn after backward.
  EXPECT_TRUE(torch::equal(next_ckpt, next_plain));

  // Without the replay the recomputation draws other masks: other gradients.
  memory::ActivationCheckpointOptions no_replay;
  no_replay.preserve_rng_state = false;
  auto unreplayed = memory::CheckpointPolicy({"*"}, no_replay).apply(model);
  torch::manual_seed(10);
  auto wrong = pass(*model, input, [&](const torch::Tensor& x) { return unreplayed->forward(x); });
  EXPECT_TRUE(torch::equal(wrong.out, plain.out));
  EXPECT_FALSE(torch::equal(wrong.grads[0], plain.grads[0]));
}

TEST(Checkpoint, Bf16AutocastIsReplayed) {
  torch::manual_seed(3);
  auto model = deep_mlp(3, 32);
  auto input = torch::randn({8, 32});
  auto under_autocast = [](auto run) {
    return [run](const torch::Tensor& x) {
      amp::autocast guard;  // bf16 on CPU
      return run(x);
    };
  };
  auto plain = pass(*model, input, under_autocast([&](const torch::Tensor& x) { return model->forward(x); }));
  ASSERT_EQ(plain.out.scalar_type(), torch::kBFloat16);
  auto ckpt = pass(*model, input, under_autocast([&](const torch::Tensor& x) {
                     auto h = memory::checkpointed(model->template ptr<paisoar::testing::BlockImpl>(0), x);
                     h = memory::checkpointed(model->template ptr<paisoar::testing::BlockImpl>(1), h);
                     return memory::checkpointed(model->template ptr<paisoar::testing::BlockImpl>(2), h);
                   }));
  ASSERT_EQ(ckpt.out.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(ckpt.out, plain.out));
  EXPECT_TRUE(torch::equal(ckpt.x_grad, plain.x_grad));
  expect_equal(ckpt.grads, plain.grads);
}

TEST(Checkpoint, DdpOverTwoRanksMatchesDdpWithoutCheckpointing) {
  constexpr int kWorld = 2, kSteps = 3;
  torch::manual_seed(4);
  std::vector<std::vector<torch::Tensor>> inputs(kSteps);
  for (auto& step : inputs) {
    for (int r = 0; r < kWorld; ++r) step.push_back(torch::randn({6, 16}));
  }
  auto train = [&](bool checkpointing, bool find_unused) {
    std::mutex mutex;
    std::vector<std::vector<torch::Tensor>> got(kWorld);
    paisoar::testing::run_ranks(kWorld, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
      torch::nn::Sequential model{nullptr};
      {
        std::lock_guard<std::mutex> lock(mutex);
        torch::manual_seed(100 + rank);  // DDP broadcasts rank 0's
        model = deep_mlp(3, 16);
      }
      if (checkpointing) model = memory::CheckpointPolicy({"0", "2"}).apply(model);
      ddp::DdpOptions options;
      options.first_bucket_mb = options.bucket_cap_mb = 0.002;  // several buckets
      options.find_unused_parameters = find_unused;
      DistributedDataParallel<torch::nn::Sequential> ddp(model, comm, options);
      torch::optim::SGD opt(model->parameters(), 0.1);
      for (const auto& step : inputs) {
        opt.zero_grad();
        ddp(step[rank]).square().mean().backward();
        opt.step();
      }
      std::lock_guard<std::mutex> lock(mutex);
      for (const auto& p : model->parameters()) got[rank].push_back(p.detach().clone());
    });
    return got;
  };
  for (bool find_unused : {false, true}) {
    SCOPED_TRACE(find_unused ? "find_unused_parameters" : "default options");
    auto want = train(false, find_unused);
    auto got = train(true, find_unused);
    for (int r = 0; r < kWorld; ++r) expect_equal(got[r], want[r]);
    expect_equal(got[1], got[0]);
  }
}

TEST(Checkpoint, PolicyIsTransparentAndWrapsOnlyMatches) {
  auto model = deep_mlp(3, 8);
  auto wrapped = memory::CheckpointPolicy({"blocks.1"}).apply(model, "blocks");
  EXPECT_FALSE(std::dynamic_pointer_cast<memory::CheckpointedImpl>(wrapped[0]));
  EXPECT_TRUE(std::dynamic_pointer_cast<memory::CheckpointedImpl>(wrapped[1]));
  EXPECT_FALSE(std::dynamic_pointer_cast<memory::CheckpointedImpl>(wrapped[2]));
  std::vector<std::string> want, got;
  for (const auto& p : model->named_parameters()) want.push_back(p.key());
  for (const auto& p : wrapped->named_parameters()) got.push_back(p.key());
  EXPECT_EQ(got, want);
  EXPECT_EQ(wrapped->parameters()[4].data_ptr(), model->parameters()[4].data_ptr());
  wrapped->eval();  // reaches the wrapped block itself
  EXPECT_FALSE(model[1]->is_training());
}

TEST(Checkpoint, NoGradOrNothingToDifferentiateIsAPlainForward) {
  auto model = deep_mlp(2, 8);
  auto wrapped = memory::CheckpointPolicy({"*"}).apply(model);
  torch::NoGradGuard no_grad;
  auto out = wrapped->forward(torch::randn({2, 8}));
  EXPECT_FALSE(out.grad_fn());
}

TEST(CheckpointErrors, PatternMatchingNothingNamesItAndListsModules) {
  auto model = deep_mlp(2, 8);
  paisoar::testing::expect_error_of<c10::ValueError>(
      [&] { memory::CheckpointPolicy({"0", "blocks.*"}).apply(model); },
      {"'blocks.*'", "matches no module", "0, 1"});
  paisoar::testing::expect_error_of<c10::ValueError>([&] { memory::CheckpointPolicy({""}); },
                                                  {"empty module-name pattern"});
}

struct TwoOutputsImpl : torch::nn::Module {
  TwoOutputsImpl() { fc = register_module("fc", torch::nn::Linear(4, 4)); }
  std::tuple<torch::Tensor, torch::Tensor> forward(torch::Tensor x) { return {fc(x), x}; }
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(TwoOutputs);

struct TwoInputsImpl : torch::nn::Module {
  TwoInputsImpl() { fc = register_module("fc", torch::nn::Linear(4, 4)); }
  torch::Tensor forward(torch::Tensor x, torch::Tensor y) { return fc(x) + y; }
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(TwoInputs);

TEST(CheckpointErrors, NonTensorForwardIsAClearError) {
  memory::Checkpointed two_out{torch::nn::AnyModule(TwoOutputs())};
  paisoar::testing::expect_error([&] { two_out->forward(torch::randn({2, 4})); },
                        {"Checkpointed(", "TwoOutputsImpl)", "returns", "forward(Tensor) -> Tensor"});
  memory::Checkpointed two_in{torch::nn::AnyModule(TwoInputs())};
  paisoar::testing::expect_error([&] { two_in->forward(torch::randn({2, 4})); },
                        {"Checkpointed(", "TwoInputsImpl)", "must take a single tensor"});
}

TEST(CheckpointErrors, UnlistedParameterIsAnErrorNotALostGradient) {
  torch::nn::Linear fc(4, 4);
  auto x = torch::randn({2, 4}, torch::requires_grad());
  auto out = memory::checkpoint([&](const torch::Tensor& in) { return fc(in); }, x, /*params=*/{});
  paisoar::testing::expect_error([&] { out.sum().backward(); }, {"not in its parameter list", "shape [4, 4]"});
}

}  // namespace
