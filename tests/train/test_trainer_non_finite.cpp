// A non-finite loss traced to its source by the Trainer: a region that
// overflows in fp16 is named with its precision and the amp.fp32_modules
// line, and that line makes the run finite; a learning rate that diverges is
// named as such, and the rate it proposes (a tenth) trains. Then the unit
// view: the finding for input data that holds NaN, and the buffers (batch
// norm's statistics) left as they were by the re-run.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "paisoar/amp/finite_loss_check.h"
#include "paisoar/amp/precision_regions.h"
#include "paisoar/comm/communicator.h"
#include "paisoar/train/trainer.h"
#include "src/diagnosis/non_finite_source.h"
#include "tests/support/synthetic_blobs.h"
#include "tests/support/temp_dir.h"
#include "tests/support/thread_ranks.h"

using namespace paisoar;

namespace non_finite_test {

// flatten -> body -> relu -> boost (Linear then LayerNorm) -> head. With
// `boost_gain` the boost's Linear multiplies by it: at 1e5 its output passes
// fp16's largest value (65504) though LayerNorm brings it back in fp32, as
// attention scores do before a softmax.
struct BoostNetImpl : torch::nn::Module {
  explicit BoostNetImpl(double boost_gain) {
    body = register_module("body", torch::nn::Linear(28 * 28, 32));
    boost = register_module("boost", torch::nn::Sequential(torch::nn::Linear(32, 32)));
    // Normalised only when it boosts; without, the three layers are linear and
    // multiply, as an unnormalised deep net's do: a large learning rate diverges.
    if (boost_gain > 0) boost->push_back(torch::nn::LayerNorm(torch::nn::LayerNormOptions({32})));
    relu = boost_gain > 0;
    head = register_module("head", torch::nn::Linear(32, 10));
    if (boost_gain > 0) {
      torch::NoGradGuard no_grad;
      auto linear = boost[0]->as<torch::nn::Linear>();
      linear->weight.uniform_(0.5, 1.0).mul_(boost_gain);
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    x = amp::in_region("body", x.flatten(1), body);
    if (relu) x = x.relu();
    x = amp::in_region("boost", x, boost);
    return amp::in_region("head", x, head);
  }
  torch::nn::Linear body{nullptr}, head{nullptr};
  torch::nn::Sequential boost{nullptr};
  bool relu = true;
};
TORCH_MODULE(BoostNet);

// A head that takes its input times 1000 (its weights a thousandth, so the
// logits are as usual): forward is finite in fp16, but its weight gradient is
// 1000 times larger, past fp16's 65504 at any loss scale above about 2, so
// the scaler skips step after step. In fp32 it is an ordinary layer.
struct LoudHeadImpl : torch::nn::Module {
  LoudHeadImpl() {
    linear = register_module("linear", torch::nn::Linear(32, 10));
    torch::NoGradGuard no_grad;
    linear->weight.mul_(1e-3);
  }
  torch::Tensor forward(const torch::Tensor& x) { return linear(x * 1000); }
  torch::nn::Linear linear{nullptr};
};
TORCH_MODULE(LoudHead);

struct GateNetImpl : torch::nn::Module {
  GateNetImpl() {
    body = register_module("body", torch::nn::Linear(28 * 28, 32));
    head = register_module("head", LoudHead());
  }
  torch::Tensor forward(torch::Tensor x) {
    x = amp::in_region("body", x.flatten(1), body).relu();
    return amp::in_region("head", x, head);
  }
  torch::nn::Linear body{nullptr};
  LoudHead head{nullptr};
};
TORCH_MODULE(GateNet);

train::TrainTask boost_task(double gain) {
  torch::manual_seed(0);
  paisoar::testing::SyntheticBlobsOptions data;
  data.size = 256;
  return train::TrainTask::of(BoostNet(gain), std::make_shared<paisoar::testing::SyntheticBlobs>(data));
}

train::TrainConfig boost_config(const std::string& run_dir) {
  train::TrainConfig c;
  c.run_dir = run_dir;
  c.checkpoint.resume = false;
  c.data.workers = 1;
  c.train.batch_size = 64;
  c.train.epochs = 2;
  c.train.log_every = 1000;
  c.profiler.enabled = false;
  return c;
}

// fit() on one rank: "" when it finished with a finite loss, else the error.
// With `squared`, the loss is the squared error to the one-hot label, whose
// gradient grows with the error: past a learning rate of 2 / the curvature,
// SGD's steps overshoot further each time, up to inf.
std::string fit_error(const train::TrainConfig& c, double gain, bool squared = false) {
  auto comm = comm::Communicator::create(comm::Store::hash(), 0, 1, paisoar::testing::test_options());
  try {
    auto task = boost_task(gain);
    if (squared) {
      task.loss = [](const torch::Tensor& logits, const torch::Tensor& labels) {
        return torch::mse_loss(logits, torch::one_hot(labels, 10).to(logits.scalar_type()));
      };
    }
    const auto result = train::Trainer(c, comm).fit(task);
    return std::isfinite(result.final_loss) ? "" : "final loss " + std::to_string(result.final_loss);
  } catch (const amp::NonFiniteLossError& e) {
    return e.what_without_backtrace();
  }
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace non_finite_test

using namespace non_finite_test;

TEST(TrainerNonFinite, AnFp16OverflowIsNamedAndThePinItProposesMakesTheRunFinite) {
  paisoar::testing::TempDir dir("non_finite");
  auto c = boost_config(dir / "run");
  c.amp.dtype = train::AmpDtype::FP16;
  const std::string error = fit_error(c, 1e5);
  std::printf("the error:\n%s\n", error.c_str());  // docs/DIAGNOSIS.md quotes it
  EXPECT_TRUE(has(error, "non-finite loss")) << error;
  EXPECT_TRUE(has(error, "rank 0, step 0, micro-batch 0 (samples ")) << error;
  EXPECT_TRUE(has(error, "region 'boost', which ran in fp16")) << error;
  EXPECT_TRUE(has(error, "  amp:\n    fp32_modules: [boost]\n")) << error;

  c.amp.fp32_modules = {"boost"};  // the proposed line
  EXPECT_EQ(fit_error(c, 1e5), "");
  EXPECT_EQ(fit_error(boost_config(dir / "run"), 1e5), "");  // the same model in fp32 trains too
}

TEST(TrainerNonFinite, ADivergingLearningRateIsNamedAndATenthOfItTrains) {
  paisoar::testing::TempDir dir("non_finite");
  auto c = boost_config(dir / "run");
  c.amp.dtype = train::AmpDtype::FP32;
  c.optimizer.lr = 3;  // diverges within 10 steps; 0.3 trains
  c.schedule.decay = train::DecayShape::Constant;
  c.schedule.warmup_steps = 0;
  c.optimizer.clip_grad_norm = 0;  // clipping would hold it back
  c.train.epochs = 10;
  c.amp.skip_nonfinite = true;  // skipped steps, then stopped as diverging: the message is the same
  ::testing::internal::CaptureStderr();
  const std::string error = fit_error(c, 0, true);
  const std::string err = ::testing::internal::GetCapturedStderr();
  std::printf("stderr:\n%s\nthe error:\n%s\n", err.c_str(), error.c_str());  // docs/DIAGNOSIS.md quotes it
  EXPECT_TRUE(has(err, "paisoar: non-finite loss skipped: rank 0, step ")) << err;
  EXPECT_TRUE(has(err, "lower optimizer.lr (try a tenth)")) << err;
  EXPECT_FALSE(has(err, "fp32_modules")) << err;  // not a precision problem
  EXPECT_TRUE(has(error, "lower optimizer.lr (try a tenth)")) << error;

  c.optimizer.lr /= 10;
  EXPECT_EQ(fit_error(c, 0, true), "");
}

TEST(TrainerNonFinite, GradientsThatOverflowInFp16AreTracedToTheRegionWhoseBackwardMadeThem) {
  paisoar::testing::TempDir dir("non_finite");
  auto c = boost_config(dir / "run");
  c.amp.dtype = train::AmpDtype::FP16;
  c.train.epochs = 4;  // 16 steps
  const auto fit = [&c](std::string& err) {
    auto comm = comm::Communicator::create(comm::Store::hash(), 0, 1, paisoar::testing::test_options());
    torch::manual_seed(0);
    paisoar::testing::SyntheticBlobsOptions data;
    data.size = 256;
    auto task = train::TrainTask::of(GateNet(), std::make_shared<paisoar::testing::SyntheticBlobs>(data));
    ::testing::internal::CaptureStderr();
    const auto result = train::Trainer(c, comm).fit(task);
    err = ::testing::internal::GetCapturedStderr();
    return result;
  };
  std::string err;
  fit(err);
  std::printf("stderr:\n%s\n", err.c_str());  // docs/TROUBLESHOOTING.md quotes it
  EXPECT_TRUE(has(err, "paisoar: rank 0, step 4: the loss scaler skipped 5 steps in a row")) << err;
  EXPECT_TRUE(has(err, "the first non-finite gradient comes from the backward of region 'head', which ran in fp16"))
      << err;
  const size_t line = err.find("    fp32_modules: [");
  ASSERT_NE(line, std::string::npos) << err;
  const std::string pins = err.substr(line + 19, err.find(']', line) - line - 19);
  EXPECT_EQ(pins, "head");

  // The proposed line: the scaler no longer skips step after step.
  for (size_t at = 0; at <= pins.size();) {
    const size_t comma = std::min(pins.find(", ", at), pins.size());
    c.amp.fp32_modules.push_back(pins.substr(at, comma - at));
    at = comma + 2;
  }
  const auto fixed = fit(err);
  EXPECT_FALSE(has(err, "steps in a row")) << err;
  EXPECT_TRUE(std::isfinite(fixed.final_loss));
}

TEST(NonFiniteSource, InputThatHoldsNanIsNamedAndBuffersStayAsTheyWere) {
  torch::manual_seed(0);
  auto net = torch::nn::Sequential(torch::nn::Flatten(), torch::nn::BatchNorm1d(4), torch::nn::Linear(4, 3));
  const auto mean_before = net[1]->as<torch::nn::BatchNorm1d>()->running_mean.clone();
  auto data = torch::randn({8, 4});
  data[3][1] = std::nan("");
  train::AmpConfig amp_config;
  amp_config.dtype = train::AmpDtype::FP32;
  const train::Precision fp32 = train::precision_for(amp_config, c10::DeviceType::CPU);
  const auto source = train::find_non_finite_source(
      *net.ptr(), [&](const torch::Tensor& x) { return net->forward(x); },
      [](const torch::Tensor& out, const torch::Tensor& y) { return torch::nn::functional::cross_entropy(out, y); },
      data, torch::zeros({8}, torch::kLong), fp32);
  EXPECT_FALSE(source.input_finite);
  EXPECT_TRUE(torch::equal(net[1]->as<torch::nn::BatchNorm1d>()->running_mean, mean_before));
  const std::string advice = train::non_finite_advice(source, 1, 7, 2, torch::arange(20, 30));
  EXPECT_TRUE(has(advice, "rank 1, step 7, micro-batch 2 (samples 20, 21, 22, 23, 24, 25, 26, 27, ... 10 in all)"))
      << advice;
  EXPECT_TRUE(has(advice, "the input data itself holds NaN or inf")) << advice;
}
