// The compression hooks on their own, 2-3 thread ranks: each one's error
// against the exact average is within its bound, error feedback keeps the
// accumulated error from growing, and each cuts the bytes it should.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <mutex>

#include "paisoar/comm/communicator.h"
#include "paisoar/ddp/comm_hook.h"
#include "tests/support/thread_ranks.h"

using namespace paisoar;
using ddp::Compression;

namespace {

struct Run {
  std::vector<torch::Tensor> outputs;  // per step, rank 0's averaged bucket
  torch::Tensor exact;                 // the true average of the inputs
  int64_t bytes_per_step = 0;
};

// Every step, rank r feeds the same gradient g_r (so errors can accumulate).
Run run_hook(int world, ddp::CompressionOptions options, std::vector<int64_t> shape, int steps) {
  ddp::BucketLayout layout{{0}, {shape}};
  int64_t numel = 1;
  for (auto d : shape) numel *= d;
  std::vector<torch::Tensor> inputs;
  torch::manual_seed(3);
  for (int r = 0; r < world; ++r) inputs.push_back(torch::randn({numel}));
  Run run;
  run.exact = torch::stack(inputs).mean(0);
  std::mutex mutex;
  paisoar::testing::run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto hook = ddp::make_comm_hook(options, comm);
    for (int s = 0; s < steps; ++s) {
      torch::Tensor flat = inputs[rank].clone();
      hook->launch(0, flat, layout);
      hook->finish(0, flat, layout);
      const int64_t bytes = hook->take_bytes();
      if (rank == 0) {
        std::lock_guard<std::mutex> lock(mutex);
        run.outputs.push_back(flat);
        run.bytes_per_step = bytes;
      }
    }
  });
  return run;
}

double max_error(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

// Max error of the sum of the first `steps` outputs against steps * exact.
double accumulated_error(const Run& run, int steps) {
  auto sum = torch::zeros_like(run.exact);
  for (int s = 0; s < steps; ++s) sum += run.outputs[s];
  return max_error(sum, run.exact * steps);
}

ddp::CompressionOptions with(Compression type, bool feedback = true) {
  ddp::CompressionOptions o;
  o.type = type;
  o.error_feedback = feedback;
  return o;
}

TEST(CommHooks, NoneIsExactAndSendsFp32) {
  auto run = run_hook(3, with(Compression::None), {1000}, 1);
  EXPECT_LT(max_error(run.outputs[0], run.exact), 1e-6);
  EXPECT_EQ(run.bytes_per_step, 4000);
}

TEST(CommHooks, Fp16HalvesBytesWithinHalfPrecision) {
  auto run = run_hook(2, with(Compression::FP16), {1000}, 1);
  // Inputs |g| < ~4: fp16 spacing there is 2^-9; two roundings and a division.
  EXPECT_LT(max_error(run.outputs[0], run.exact), 4e-3);
  EXPECT_EQ(run.bytes_per_step, 2000);
  auto bf = run_hook(2, with(Compression::BF16), {1000}, 1);
  EXPECT_LT(max_error(bf.outputs[0], bf.exact), 3e-2);  // bf16 spacing near 4: 2^-5
  EXPECT_EQ(bf.bytes_per_step, 2000);
}

TEST(CommHooks, Int8ErrorIsWithinHalfAStepAndFeedbackKeepsItBounded) {
  const int world = 2, steps = 40;
  auto run = run_hook(world, with(Compression::Int8), {1000}, steps);
  EXPECT_EQ(run.bytes_per_step, 1000 + 4);  // a quarter, plus the scale
  // Each rank's rounding error is at most scale/2 = absmax/254; averaged over ranks.
  const double bound = 4.5 / 254.0;  // |g| < 4.5 for these 2000 normal samples
  EXPECT_LT(max_error(run.outputs[0], run.exact), bound);
  // With feedback the error of the running sum stays within one step's bound
  // while the sum grows: relative error falls like 1/steps.
  EXPECT_LT(accumulated_error(run, steps), 2 * bound);
  auto plain = run_hook(world, with(Compression::Int8, /*feedback=*/false), {1000}, steps);
  EXPECT_GT(accumulated_error(plain, steps), 5 * accumulated_error(run, steps))
      << "without feedback the same rounding repeats every step";
}

TEST(CommHooks, PowerSgdCutsBytesTenfold) {
  auto run = run_hook(2, with(Compression::PowerSGD), {128, 1600}, 1);
  const int64_t fp32_bytes = 128 * 1600 * 4;
  EXPECT_EQ(run.bytes_per_step, (128 + 1600) * 4 * 4);  // P and Q, rank 4, fp32
  EXPECT_GE(fp32_bytes / run.bytes_per_step, 10);
}

TEST(CommHooks, PowerSgdFeedbackMakesTheAverageOverStepsConverge) {
  // One rank-4 step misses most of a random 16 x 64 matrix; error feedback
  // resends what was lost, so the mean of the outputs approaches the truth,
  // while without feedback the same part is lost every step.
  const int steps = 60;
  auto run = run_hook(2, with(Compression::PowerSGD), {16, 64}, steps);
  auto plain = run_hook(2, with(Compression::PowerSGD, false), {16, 64}, steps);
  const double first = max_error(run.outputs[0], run.exact);
  const double with_feedback = accumulated_error(run, steps) / steps;
  const double without = accumulated_error(plain, steps) / steps;
  EXPECT_LT(with_feedback, first / 4) << "first-step error " << first;
  EXPECT_GT(without, 2 * with_feedback);
}

TEST(CommHooks, PowerSgdIsExactForLowRankGradients) {
  // Gradients of rank 2 are captured exactly by rank-4 factors after the
  // warm-started Q has seen them once.
  const int world = 2;
  ddp::BucketLayout layout{{0, 64 * 32}, {{64, 32}, {16}}};
  std::vector<torch::Tensor> inputs;
  torch::manual_seed(5);
  auto u = torch::randn({64, 2}), v = torch::randn({2, 32});
  for (int r = 0; r < world; ++r) {
    auto m = u.mm(v) * (r + 1);
    inputs.push_back(torch::cat({m.reshape({-1}), torch::randn({16})}));
  }
  auto exact = torch::stack(inputs).mean(0);
  paisoar::testing::run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto hook = ddp::make_comm_hook(with(Compression::PowerSGD, false), comm);
    for (int s = 0; s < 2; ++s) {
      auto flat = inputs[rank].clone();
      hook->launch(0, flat, layout);
      hook->finish(0, flat, layout);
      if (s == 1) EXPECT_LT(max_error(flat, exact), 1e-4);
    }
  });
}

TEST(CommHooks, ParseNamesTheChoices) {
  EXPECT_EQ(ddp::parse_compression("int8"), Compression::Int8);
  try {
    ddp::parse_compression("int4");
    FAIL();
  } catch (const c10::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("none, fp16, bf16, int8 or powersgd"), std::string::npos);
  }
}

}  // namespace

namespace {

TEST(CommHooks, HierarchicalEqualsTheFlatAverage) {
  // 4 ranks as 2 nodes x 2, a bucket size that does not split evenly.
  const int world = 4;
  std::vector<torch::Tensor> inputs;
  torch::manual_seed(9);
  for (int r = 0; r < world; ++r) inputs.push_back(torch::randn({1001}));
  auto exact = torch::stack(inputs).mean(0);
  ddp::DdpOptions options;
  options.ranks_per_node = 2;
  ddp::BucketLayout layout{{0}, {{1001}}};
  paisoar::testing::run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto hook = ddp::make_comm_hook(options, comm);
    for (int s = 0; s < 2; ++s) {
      auto flat = inputs[rank].clone();
      hook->launch(0, flat, layout);
      hook->finish(0, flat, layout);
      EXPECT_LT(max_error(flat, exact), 1e-6);
    }
    // Reduce-scatter sends the padded bucket (1002 floats); across nodes and
    // back only a half each.
    EXPECT_EQ(hook->take_bytes(), 2 * 4 * (1002 + 501 + 501));
  });
}

}  // namespace

namespace {

// An overflow on one rank reaches every rank as non-finite (so the GradScaler
// skips the step) and does not poison the hook's state for the next step.
TEST(CommHooks, OverflowOnOneRankIsNonFiniteEverywhereAndRecovers) {
  for (auto type : {Compression::Int8, Compression::PowerSGD, Compression::FP16}) {
    ddp::BucketLayout layout{{0}, {{16, 64}}};
    paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
      auto hook = ddp::make_comm_hook(with(type), comm);
      auto flat = torch::ones({16 * 64});
      if (rank == 1) flat[5] = std::numeric_limits<float>::infinity();
      hook->launch(0, flat, layout);
      hook->finish(0, flat, layout);
      EXPECT_FALSE(torch::isfinite(flat).all().item<bool>()) << ddp::to_string(type);
      auto next = torch::ones({16 * 64});
      hook->launch(0, next, layout);
      hook->finish(0, next, layout);
      EXPECT_TRUE(torch::isfinite(next).all().item<bool>()) << ddp::to_string(type);
    });
  }
}

}  // namespace
