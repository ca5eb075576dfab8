// StepProfiler's accounting: per-phase totals, means and fractions against
// hand-computed values on a fake clock (exact, no timing assertions), time
// carved out of another phase, the real clock's phases being non-negative and
// in order, and the errors for misuse.
#include <gtest/gtest.h>

#include <thread>

#include "paisoar/profiler/step_profiler.h"
#include "tests/profiler/fake_clock.h"
#include "tests/support/expect_error.h"

using namespace paisoar::profiler;
using paisoar::testing::expect_error;
using paisoar::testing::FakeClock;

namespace {

// Values below are sums of binary fractions (multiples of 1/64 s), so every
// total, mean and fraction is exact in double.
TEST(StepProfiler, SummaryArithmeticFromAddedTimes) {
  FakeClock clock;
  StepProfiler prof({}, clock.clock());
  // step 0: 1 s long; data 0.25, forward 0.25, backward 0.375, optimizer 0.125
  prof.begin_step(0);
  prof.add(Phase::DataWait, 0.25);
  prof.add(Phase::Forward, 0.25);
  prof.add(Phase::Backward, 0.375);
  prof.add(Phase::Optimizer, 0.125);
  clock.advance(1.0);
  prof.end_step();
  // step 1: 3 s long; data 0.75, forward 0.25 + 0.25 (two adds), the rest untracked
  prof.begin_step(1);
  prof.add(Phase::DataWait, 0.75);
  prof.add(Phase::Forward, 0.25);
  prof.add(Phase::Forward, 0.25);
  clock.advance(3.0);
  prof.end_step();

  const ProfileSummary s = prof.summary();
  EXPECT_EQ(s.steps, 2);
  EXPECT_EQ(s.step_total_s, 4.0);
  EXPECT_EQ(s.step_mean_s, 2.0);
  EXPECT_EQ(s.step_min_s, 1.0);
  EXPECT_EQ(s.step_max_s, 3.0);
  EXPECT_EQ(s[Phase::DataWait].total_s, 1.0);
  EXPECT_EQ(s[Phase::DataWait].mean_s, 0.5);
  EXPECT_EQ(s[Phase::DataWait].fraction, 0.25);
  EXPECT_EQ(s[Phase::Forward].total_s, 0.75);
  EXPECT_EQ(s[Phase::Forward].fraction, 0.1875);
  EXPECT_EQ(s[Phase::Backward].mean_s, 0.1875);
  EXPECT_EQ(s[Phase::Optimizer].total_s, 0.125);
  EXPECT_EQ(s[Phase::Communication].total_s, 0.0);
  EXPECT_EQ(s[Phase::Other].fraction, 0.0);
  // untracked: step 0 0 s, step 1 3 - 1.25 = 1.75 s
  EXPECT_EQ(s.untracked_total_s, 1.75);
  EXPECT_EQ(s.untracked_mean_s, 0.875);
}

TEST(StepProfiler, PhaseScopesOnTheFakeClock) {
  FakeClock clock;
  StepProfiler prof({}, clock.clock());
  prof.begin_step(5);
  clock.advance(0.5);  // before any phase: untracked
  {
    auto s = prof.phase(Phase::Forward);
    clock.advance(0.25);
  }
  {
    auto s = prof.phase(Phase::Backward);
    clock.advance(0.5);
    s.stop();
    clock.advance(0.125);  // after stop(): not backward's
  }
  prof.end_step();
  const auto s = prof.summary();
  EXPECT_EQ(s.step_total_s, 1.375);
  EXPECT_EQ(s[Phase::Forward].total_s, 0.25);
  EXPECT_EQ(s[Phase::Backward].total_s, 0.5);
  EXPECT_EQ(s.untracked_total_s, 0.625);
}

// DDP's exposed communication happens inside backward's scope: carving moves
// it from backward to communication, the step total is unchanged.
TEST(StepProfiler, CarvedTimeMovesBetweenPhases) {
  FakeClock clock;
  StepProfiler prof({}, clock.clock());
  prof.begin_step(0);
  {
    auto s = prof.phase(Phase::Backward);
    clock.advance(1.0);
  }
  prof.add(Phase::Communication, 0.25, Phase::Backward);
  prof.end_step();
  // Carving more than was measured leaves the source at 0, not negative.
  prof.begin_step(1);
  prof.add(Phase::Communication, 0.5, Phase::Optimizer);
  clock.advance(1.0);
  prof.end_step();
  const auto s = prof.summary();
  EXPECT_EQ(s[Phase::Backward].total_s, 0.75);
  EXPECT_EQ(s[Phase::Communication].total_s, 0.75);
  EXPECT_EQ(s[Phase::Optimizer].total_s, 0.0);
  EXPECT_EQ(s[Phase::Communication].fraction, 0.375);
}

TEST(StepProfiler, RealClockPhasesAreNonNegativeAndOrdered) {
  ProfilerOptions options;
  options.trace_start_step = 0;
  options.trace_steps = 3;
  StepProfiler prof(options);
  const Phase order[] = {Phase::DataWait, Phase::Forward, Phase::Backward, Phase::Optimizer};
  for (int64_t step = 0; step < 3; ++step) {
    prof.begin_step(step);
    for (Phase p : order) {
      auto s = prof.phase(p);
      std::this_thread::yield();
    }
    prof.end_step();
  }
  const auto summary = prof.summary();
  EXPECT_EQ(summary.steps, 3);
  EXPECT_GE(summary.step_min_s, 0.0);
  EXPECT_LE(summary.step_min_s, summary.step_max_s);
  double phases = 0;
  for (const auto& p : summary.phases) {
    EXPECT_GE(p.total_s, 0.0);
    phases += p.total_s;
  }
  EXPECT_LE(phases, summary.step_total_s);

  // Spans: per step, the phases in the order they ran, inside their step.
  const auto spans = prof.trace_spans();
  ASSERT_EQ(spans.size(), 3u * 5u);
  for (int64_t step = 0; step < 3; ++step) {
    const auto* group = &spans[static_cast<size_t>(step) * 5];
    const TraceSpan& step_span = group[4];
    EXPECT_EQ(step_span.name, "step");
    EXPECT_EQ(step_span.args.at("step"), static_cast<double>(step));
    double previous_end = step_span.begin_s;
    for (size_t k = 0; k < 4; ++k) {
      EXPECT_EQ(group[k].name, phase_name(order[k]));
      EXPECT_GE(group[k].begin_s, previous_end);
      EXPECT_GE(group[k].end_s, group[k].begin_s);
      previous_end = group[k].end_s;
    }
    EXPECT_LE(previous_end, step_span.end_s);
  }
}

TEST(StepProfiler, DisabledDoesNothing) {
  ProfilerOptions options;
  options.enabled = false;
  StepProfiler prof(options);
  prof.end_step();  // not even an error
  prof.begin_step(0);
  { auto s = prof.phase(Phase::Forward); }
  prof.add(Phase::DataWait, 1.0);
  EXPECT_FALSE(prof.add_span("x", "y", 0, 1));
  prof.end_step();
  EXPECT_EQ(prof.summary().steps, 0);
}

TEST(StepProfiler, MisuseIsAnError) {
  FakeClock clock;
  StepProfiler prof({}, clock.clock());
  expect_error([&] { (void)prof.phase(Phase::Forward); }, {"outside a step", "begin_step"});
  expect_error([&] { prof.add(Phase::Forward, 1.0); }, {"outside a step"});
  expect_error([&] { prof.end_step(); }, {"without begin_step"});
  prof.begin_step(3);
  expect_error([&] { prof.begin_step(4); }, {"still open", "end_step"});
  expect_error([&] { prof.add(Phase::DataWait, -1.0); }, {"data_wait", ">= 0"});
  expect_error([&] { prof.add(Phase::Backward, 1.0, Phase::Backward); }, {"another phase"});
  {
    auto s = prof.phase(Phase::Forward);
    expect_error([&] { prof.end_step(); }, {"still open"});
  }
  prof.end_step();
  expect_error([&] { prof.begin_step(3); }, {"must increase"});
  prof.begin_step(7);
  expect_error([&] { prof.add_span("late", "x", 2.0, 1.0); }, {"late", "before it begins"});
}

TEST(StepProfiler, InconsistentOptionsAreRejected) {
  ProfilerOptions options;
  options.trace_steps = -1;
  expect_error([&] { StepProfiler p(options); }, {"trace_steps"});
  options = {};
  options.op_profile = true;
  options.op_trace_path = "/tmp/x.json";
  expect_error([&] { StepProfiler p(options); }, {"op_profile", "trace_start_step"});
  options.trace_start_step = 0;
  options.trace_steps = 1;
  options.op_trace_path.clear();
  expect_error([&] { StepProfiler p(options); }, {"op_trace_path"});
}

}  // namespace
