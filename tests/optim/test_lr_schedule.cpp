// LrSchedule against its formulas written out by hand in double precision, for
// every step of each decay and two param groups with different base lrs; resume
// through state_dict and torch::save of the optimizer; bad options (messages
// checked); the linear scaling rule.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>

#include "paisoar/optim.h"
#include "tests/support/expect_error.h"

using paisoar::optim::LrDecay;
using paisoar::optim::LrSchedule;
using paisoar::optim::LrScheduleOptions;

namespace {

const double kPi = std::acos(-1.0);

// An SGD with two groups: lr 0.4 (default) and 0.01.
struct TwoGroups {
  torch::Tensor a = torch::ones({3}, torch::requires_grad());
  torch::Tensor b = torch::ones({2}, torch::requires_grad());
  torch::optim::SGD sgd{{torch::optim::OptimizerParamGroup({a}),
                         torch::optim::OptimizerParamGroup(
                             {b}, std::make_unique<torch::optim::SGDOptions>(0.01))},
                        torch::optim::SGDOptions(0.4)};
  double lr(size_t group) { return sgd.param_groups()[group].options().get_lr(); }
};

// Steps the schedule through [0, last] and checks both groups' lr against
// base * want(step), with the lr set at construction being step 0's.
void expect_schedule(const LrScheduleOptions& options, int64_t last,
                     const std::function<double(int64_t)>& want) {
  TwoGroups opt;
  LrSchedule schedule(opt.sgd, options);
  for (int64_t k = 0; k <= last; ++k) {
    if (k > 0) schedule.step();
    ASSERT_EQ(schedule.last_step(), k);
    const double f = want(k);
    EXPECT_NEAR(schedule.factor_at(k), f, 1e-12) << "step " << k;
    EXPECT_NEAR(opt.lr(0), 0.4 * f, 1e-12) << "group 0, step " << k;
    EXPECT_NEAR(opt.lr(1), 0.01 * f, 1e-12) << "group 1, step " << k;
    EXPECT_NEAR(schedule.lr_at(k, 1), 0.01 * f, 1e-12) << "step " << k;
  }
}

using paisoar::testing::expect_error;

}  // namespace

TEST(LrSchedule, ConstantWithoutWarmupKeepsTheBaseLr) {
  expect_schedule(LrScheduleOptions{}, 5, [](int64_t) { return 1.0; });
}

TEST(LrSchedule, LinearWarmupFromZeroThenConstant) {
  LrScheduleOptions o;
  o.warmup_steps = 4;
  // By hand: 0, 1/4, 2/4, 3/4, then 1.
  const double want[] = {0.0, 0.25, 0.5, 0.75, 1.0, 1.0, 1.0};
  expect_schedule(o, 6, [&](int64_t k) { return want[k]; });
}

TEST(LrSchedule, WarmupStartFactor) {
  LrScheduleOptions o;
  o.warmup_steps = 5;
  o.warmup_start_factor = 0.1;
  expect_schedule(o, 8, [](int64_t k) { return k < 5 ? 0.1 + 0.9 * k / 5.0 : 1.0; });
}

TEST(LrSchedule, CosineKnownPoints) {
  LrScheduleOptions o;
  o.decay = LrDecay::Cosine;
  o.total_steps = 10;
  TwoGroups opt;
  LrSchedule schedule(opt.sgd, o);
  EXPECT_DOUBLE_EQ(schedule.factor_at(0), 1.0);
  EXPECT_NEAR(schedule.factor_at(5), 0.5, 1e-15);  // half way: cos(pi/2) = 0
  EXPECT_NEAR(schedule.factor_at(10), 0.0, 1e-15);
  EXPECT_EQ(schedule.factor_at(11), 0.0);  // stays at the end value
}

TEST(LrSchedule, WarmupThenCosineToAFinalFactor) {
  LrScheduleOptions o;
  o.warmup_steps = 3;
  o.decay = LrDecay::Cosine;
  o.total_steps = 13;
  o.final_factor = 0.1;
  expect_schedule(o, 16, [](int64_t k) {
    if (k < 3) return k / 3.0;
    if (k >= 13) return 0.1;
    return 0.1 + 0.9 * 0.5 * (1 + std::cos(kPi * (k - 3) / 10.0));
  });
}

TEST(LrSchedule, WarmupAsLongAsTrainingEndsAtTheFinalFactor) {
  LrScheduleOptions o;
  o.warmup_steps = 4;
  o.decay = LrDecay::Cosine;
  o.total_steps = 4;
  o.final_factor = 0.2;
  expect_schedule(o, 6, [](int64_t k) { return k < 4 ? k / 4.0 : 0.2; });
}

TEST(LrSchedule, StepEveryStepSizeAfterWarmup) {
  LrScheduleOptions o;
  o.warmup_steps = 2;
  o.decay = LrDecay::Step;
  o.step_size = 3;
  o.gamma = 0.5;
  // Steps 2-4: 1, 5-7: 0.5, 8-10: 0.25, 11: 0.125.
  expect_schedule(o, 11, [](int64_t k) {
    if (k < 2) return k / 2.0;
    return std::pow(0.5, static_cast<double>((k - 2) / 3));
  });
}

TEST(LrSchedule, StepAtMilestones) {
  LrScheduleOptions o;
  o.warmup_steps = 5;
  o.warmup_start_factor = 0.2;
  o.decay = LrDecay::Step;
  o.milestones = {30, 60, 80};  // Goyal et al.'s ResNet-50 recipe, in epochs
  expect_schedule(o, 90, [](int64_t k) {
    if (k < 5) return 0.2 + 0.8 * k / 5.0;
    if (k < 30) return 1.0;
    if (k < 60) return 0.1;
    if (k < 80) return 0.01;
    return 0.001;
  });
}

TEST(LrSchedule, PolynomialWithPowerAndFinalFactor) {
  LrScheduleOptions o;
  o.warmup_steps = 2;
  o.decay = LrDecay::Polynomial;
  o.total_steps = 12;
  o.power = 2.0;
  o.final_factor = 0.05;
  expect_schedule(o, 14, [](int64_t k) {
    if (k < 2) return k / 2.0;
    if (k >= 12) return 0.05;
    const double left = 1.0 - (k - 2) / 10.0;
    return 0.05 + 0.95 * left * left;
  });
}

TEST(LrSchedule, LinearDecayIsPolynomialOfPowerOne) {
  LrScheduleOptions o;
  o.decay = LrDecay::Polynomial;
  o.total_steps = 8;
  expect_schedule(o, 9, [](int64_t k) { return k >= 8 ? 0.0 : 1.0 - k / 8.0; });
}

TEST(LrSchedule, SetStepEqualsSteppingThere) {
  LrScheduleOptions o;
  o.warmup_steps = 3;
  o.decay = LrDecay::Cosine;
  o.total_steps = 20;
  TwoGroups stepped, jumped;
  LrSchedule a(stepped.sgd, o), b(jumped.sgd, o);
  for (int k = 0; k < 7; ++k) a.step();
  b.set_step(7);
  EXPECT_EQ(b.last_step(), 7);
  EXPECT_EQ(a.get_last_lr(), b.get_last_lr());
  EXPECT_EQ(b.get_last_lr()[1], b.lr_at(7, 1));
}

TEST(LrSchedule, WorksWithPaisoarOptimizers) {
  torch::Tensor w = torch::ones({2, 2}, torch::requires_grad());
  paisoar::optim::LARS lars({w}, paisoar::optim::LARSOptions(2.0));
  LrScheduleOptions o;
  o.warmup_steps = 4;
  LrSchedule schedule(lars, o);
  schedule.step();
  EXPECT_DOUBLE_EQ(lars.param_groups()[0].options().get_lr(), 0.5);
}

// A run interrupted at step 6 and resumed from a checkpoint (the optimizer
// through torch::save, the schedule through state_dict) sets the same lrs as
// an uninterrupted run. LibTorch 1.13's torch::load restores the optimizer's
// state but not its groups' lr; PyTorch's load_state_dict (and a checkpoint
// that keeps the options) brings back step 6's lr instead of the base lr. Both
// resume right, because the schedule's state carries the base lrs.
TEST(LrSchedule, ResumesFromStateDictAndASavedOptimizer) {
  LrScheduleOptions o;
  o.warmup_steps = 4;
  o.decay = LrDecay::Cosine;
  o.total_steps = 15;
  o.final_factor = 0.01;
  for (bool lr_restored : {false, true}) {
    TwoGroups straight;
    LrSchedule reference(straight.sgd, o);

    TwoGroups first;
    LrSchedule before(first.sgd, o);
    for (int k = 0; k < 6; ++k) before.step();
    std::stringstream saved_optimizer;
    torch::save(first.sgd, saved_optimizer);
    const auto saved_schedule = before.state_dict();

    TwoGroups resumed;
    torch::load(resumed.sgd, saved_optimizer);
    if (lr_restored) {
      for (size_t g = 0; g < 2; ++g) resumed.sgd.param_groups()[g].options().set_lr(first.lr(g));
    }
    LrSchedule after(resumed.sgd, o);
    after.load_state_dict(saved_schedule);
    EXPECT_EQ(after.last_step(), 6);
    EXPECT_EQ(after.base_lrs(), (std::vector<double>{0.4, 0.01}));
    for (int k = 0; k <= 15; ++k) {
      if (k > 0) reference.step();
      if (k > 6) after.step();
      if (k >= 6) {
        EXPECT_EQ(after.get_last_lr(), reference.get_last_lr()) << "step " << k << " " << lr_restored;
      }
    }
  }
}

TEST(LrSchedule, LoadStateDictRejectsForeignState) {
  TwoGroups opt;
  LrSchedule schedule(opt.sgd, {});
  expect_error([&] { schedule.load_state_dict({{"base_lrs", torch::tensor({0.1, 0.2})}}); },
               {"'last_step'", "missing"});
  expect_error(
      [&] {
        schedule.load_state_dict({{"last_step", torch::tensor(3)}, {"base_lrs", torch::tensor({0.1})}});
      },
      {"1 base lrs", "2 param groups"});
  EXPECT_EQ(schedule.last_step(), 0);  // nothing changed
  EXPECT_EQ(schedule.base_lrs(), (std::vector<double>{0.4, 0.01}));
}

TEST(LrSchedule, GroupAddedAfterConstructionIsAnError) {
  TwoGroups opt;
  LrSchedule schedule(opt.sgd, {});
  opt.sgd.add_param_group(torch::optim::OptimizerParamGroup({torch::ones({1}, torch::requires_grad())}));
  expect_error([&] { schedule.step(); }, {"3 param groups", "had 2", "after adding every param group"});
}

TEST(LrSchedule, BadOptionsNameTheFieldAndTheFix) {
  TwoGroups opt;
  auto make = [&](LrScheduleOptions o) { return [&opt, o] { LrSchedule s(opt.sgd, o); }; };
  LrScheduleOptions o;

  o = {};
  o.warmup_steps = -1;
  expect_error(make(o), {"warmup_steps", ">= 0"});
  o = {};
  o.warmup_start_factor = 1.5;
  expect_error(make(o), {"warmup_start_factor", "[0, 1]"});

  o = {};
  o.decay = LrDecay::Cosine;  // total_steps left at 0
  expect_error(make(o), {"cosine", "total_steps > 0", "warmup included"});
  o.total_steps = 10;
  o.warmup_steps = 11;
  expect_error(make(o), {"warmup_steps (11) exceeds total_steps (10)"});
  o = {};
  o.decay = LrDecay::Polynomial;
  o.total_steps = 10;
  o.power = 0;
  expect_error(make(o), {"power", "> 0"});
  o.power = 1;
  o.final_factor = -0.1;
  expect_error(make(o), {"final_factor", "[0, 1]"});
  o.final_factor = 0;
  o.total_steps = -3;
  expect_error(make(o), {"polynomial", "total_steps > 0"});

  o = {};
  o.decay = LrDecay::Step;  // neither step_size nor milestones
  expect_error(make(o), {"exactly one of step_size", "milestones"});
  o.step_size = 5;
  o.milestones = {10};
  expect_error(make(o), {"exactly one of step_size"});
  o.step_size = 0;
  o.milestones = {10, 10};
  expect_error(make(o), {"strictly increasing"});
  o.milestones = {3, 10};
  o.warmup_steps = 5;
  expect_error(make(o), {"milestones[0] (3)", "inside the warmup"});
  o.milestones = {10};
  o.gamma = 0;
  expect_error(make(o), {"gamma", "> 0"});

  LrSchedule fine(opt.sgd, {});
  expect_error([&] { fine.factor_at(-1); }, {"step must be >= 0"});
  expect_error([&] { fine.lr_at(0, 2); }, {"group 2 out of range"});
}

TEST(ScaledLr, LinearScalingRule) {
  using paisoar::optim::scaled_lr;
  EXPECT_DOUBLE_EQ(scaled_lr(0.1, 8192, 256), 3.2);  // Goyal et al.: 0.1 per 256 images
  EXPECT_DOUBLE_EQ(scaled_lr(1e-3, 64, 256), 2.5e-4);
  expect_error([] { scaled_lr(0, 8192, 256); }, {"base_lr", "> 0"});
  expect_error([] { scaled_lr(0.1, 0, 256); }, {"global_batch", "> 0"});
  expect_error([] { scaled_lr(0.1, 256, -1); }, {"base_batch", "> 0"});
}
