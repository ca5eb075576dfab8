// The advisor's verdicts on crafted measurements: each rule trips just past
// its threshold and not just under it, a healthy run gets no advice, and the report
// prints the phase table and the advice.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include "paisoar/profiler/advisor.h"
#include "paisoar/profiler/report.h"

using namespace paisoar::profiler;

namespace {

// 100 ms steps, mixed precision on, 2% data wait, 5% exposed communication,
// a steady loss scale, four ranks within 5% of each other.
RunMeasurements healthy() {
  RunMeasurements run;
  run.steps = 500;
  run.step_mean_s = 0.100;
  run.phase_mean_s[phase_index(Phase::DataWait)] = 0.002;
  run.phase_mean_s[phase_index(Phase::Forward)] = 0.030;
  run.phase_mean_s[phase_index(Phase::Backward)] = 0.050;
  run.phase_mean_s[phase_index(Phase::Communication)] = 0.005;
  run.phase_mean_s[phase_index(Phase::Optimizer)] = 0.010;
  run.per_rank_step_s = {0.100, 0.102, 0.098, 0.104};
  run.loss_scale_history = std::vector<double>(300, 65536.0);
  run.mixed_precision = true;
  return run;
}

std::vector<std::string> verdicts(const RunMeasurements& run) {
  std::vector<std::string> out;
  for (const auto& a : advise(run)) out.push_back(a.verdict);
  return out;
}

bool mentions(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Advisor, HealthyRunGetsNoAdvice) { EXPECT_TRUE(advise(healthy()).empty()); }

TEST(Advisor, DataBound) {
  auto run = healthy();
  run.phase_mean_s[phase_index(Phase::DataWait)] = 0.0099;  // just under 10%: not yet
  EXPECT_TRUE(advise(run).empty());
  run.phase_mean_s[phase_index(Phase::DataWait)] = 0.025;
  const auto advice = advise(run);
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_EQ(advice[0].verdict, kDataBound);
  EXPECT_TRUE(mentions(advice[0].evidence, "25.0 ms")) << advice[0].evidence;
  EXPECT_TRUE(mentions(advice[0].evidence, "25.0%")) << advice[0].evidence;
  EXPECT_TRUE(mentions(advice[0].action, "workers"));
  EXPECT_TRUE(mentions(advice[0].action, "record shards"));
  EXPECT_TRUE(mentions(advice[0].action, "DevicePreprocess"));
}

TEST(Advisor, CommunicationBound) {
  auto run = healthy();
  run.phase_mean_s[phase_index(Phase::Communication)] = 0.0299;  // just under 30%: not yet
  EXPECT_TRUE(advise(run).empty());
  run.phase_mean_s[phase_index(Phase::Communication)] = 0.040;
  const auto advice = advise(run);
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_EQ(advice[0].verdict, kCommunicationBound);
  EXPECT_TRUE(mentions(advice[0].evidence, "40.0%")) << advice[0].evidence;
  for (const char* lever : {"bucket_cap_mb", "fp16", "powersgd", "hierarchical"}) {
    EXPECT_TRUE(mentions(advice[0].action, lever)) << lever;
  }
}

TEST(Advisor, LossScaleFallingTooOften) {
  auto run = healthy();
  // Four falls in the last 100 updates is the limit, five is unstable; the
  // scale ends only 2^4 below its start, so the collapse rule stays quiet.
  auto& h = run.loss_scale_history;
  for (int fall = 0; fall < 4; ++fall) {
    const size_t at = h.size() - 90 + 20 * fall;
    for (size_t i = at; i < h.size(); ++i) h[i] /= 2;
  }
  EXPECT_TRUE(advise(run).empty());
  for (size_t i = h.size() - 5; i < h.size(); ++i) h[i] *= 2;  // a growth, then a fall:
  for (size_t i = h.size() - 3; i < h.size(); ++i) h[i] /= 2;  // five falls now
  run.skipped_steps = 5;
  const auto advice = advise(run);
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_EQ(advice[0].verdict, kUnstableLossScale);
  EXPECT_TRUE(mentions(advice[0].evidence, "5 of the last 100")) << advice[0].evidence;
  EXPECT_TRUE(mentions(advice[0].evidence, "5 optimizer steps skipped")) << advice[0].evidence;
  EXPECT_TRUE(mentions(advice[0].action, "init_scale"));
  EXPECT_TRUE(mentions(advice[0].action, "PrecisionPolicy"));
}

TEST(Advisor, LossScaleCollapsedSinceTheStart) {
  auto run = healthy();
  // Two early falls of 2^4 each (falls long ago, outside the last 100): 2^8 lower.
  auto& h = run.loss_scale_history;
  for (size_t i = 10; i < h.size(); ++i) h[i] /= 16;
  for (size_t i = 20; i < h.size(); ++i) h[i] /= 16;
  const auto advice = advise(run);
  ASSERT_EQ(verdicts(run), std::vector<std::string>{kUnstableLossScale});
  EXPECT_TRUE(mentions(advice[0].evidence, "65536 to 256 (256x lower)")) << advice[0].evidence;
  // Exactly 2^5 lower already counts; just under it does not.
  std::fill(h.begin(), h.end(), 65536.0);
  h.back() = 2048.0;
  EXPECT_EQ(verdicts(run), std::vector<std::string>{kUnstableLossScale});
  h.back() = 2049.0;
  EXPECT_TRUE(advise(run).empty());
}

TEST(Advisor, Straggler) {
  auto run = healthy();
  // median of {100, 100, 100, 114.9} = 100: just under the +15% limit
  run.per_rank_step_s = {0.100, 0.100, 0.100, 0.1149};
  EXPECT_TRUE(advise(run).empty());
  run.per_rank_step_s = {0.100, 0.100, 0.130, 0.100};
  const auto advice = advise(run);
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_EQ(advice[0].verdict, kStraggler);
  EXPECT_TRUE(mentions(advice[0].evidence, "rank 2: 130.0 ms")) << advice[0].evidence;
  EXPECT_TRUE(mentions(advice[0].evidence, "+30.0%")) << advice[0].evidence;
  EXPECT_TRUE(mentions(advice[0].action, "machine of rank(s) 2"));
  // One rank alone cannot straggle.
  run.per_rank_step_s = {0.5};
  EXPECT_TRUE(advise(run).empty());
}

// With each rank's phases the straggler is named with the part of the step it
// loses its time in; the other ranks wait for it in communication.
std::array<double, kPhaseCount> phases(double data, double forward, double backward, double comm, double optimizer) {
  std::array<double, kPhaseCount> p{};
  p[phase_index(Phase::DataWait)] = data;
  p[phase_index(Phase::Forward)] = forward;
  p[phase_index(Phase::Backward)] = backward;
  p[phase_index(Phase::Communication)] = comm;
  p[phase_index(Phase::Optimizer)] = optimizer;
  return p;
}

TEST(Advisor, StragglerIsNamedWithThePhaseItLosesTimeIn) {
  auto run = healthy();
  // Rank 1 waits 40 ms more for data; the others wait for it in communication.
  run.per_rank_phase_s = {phases(0.002, 0.03, 0.05, 0.045, 0.01), phases(0.042, 0.03, 0.05, 0.005, 0.01),
                          phases(0.002, 0.03, 0.05, 0.045, 0.01)};
  auto advice = advise(run);
  ASSERT_EQ(verdicts(run), std::vector<std::string>{kStraggler});
  EXPECT_TRUE(mentions(advice[0].evidence, "rank 1 is busy 132.0 ms per step against 92.0 ms for the other ranks"))
      << advice[0].evidence;
  EXPECT_TRUE(mentions(advice[0].evidence, "the excess is in data wait: 42.0 ms against 2.0 ms (+40.0 ms, 40.0% of "
                                           "the 100.0 ms step)"))
      << advice[0].evidence;
  EXPECT_TRUE(mentions(advice[0].action, "data.workers")) << advice[0].action;
  // Rank 0 computes 30 ms more per step (as under a CPU hog).
  run.per_rank_phase_s = {phases(0.002, 0.045, 0.065, 0.005, 0.01), phases(0.002, 0.03, 0.05, 0.035, 0.01),
                          phases(0.002, 0.03, 0.05, 0.035, 0.01)};
  advice = advise(run);
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_TRUE(mentions(advice[0].evidence, "rank 0 is busy")) << advice[0].evidence;
  EXPECT_TRUE(mentions(advice[0].evidence, "the excess is in compute (forward and backward): 110.0 ms against "
                                           "80.0 ms"))
      << advice[0].evidence;
  EXPECT_TRUE(mentions(advice[0].action, "CPU hog")) << advice[0].action;
  // Within 15% of the median: nothing.
  run.per_rank_phase_s = {phases(0.002, 0.03, 0.05, 0.005, 0.01), phases(0.015, 0.03, 0.05, 0.005, 0.01)};
  run.per_rank_phase_s.push_back(run.per_rank_phase_s[0]);
  EXPECT_TRUE(advise(run).empty());
}

// Data-parallel efficiency: the median rank's busy share of the step; below
// 0.8 the cause is a straggler, a batch too small to hide the traffic behind,
// or exposed communication.
TEST(Advisor, LowDataParallelEfficiencyNamesItsCause) {
  auto run = healthy();
  EXPECT_LT(data_parallel_efficiency(run), 0);  // no per-rank phases: not known
  run.per_rank_phase_s = {phases(0.002, 0.03, 0.05, 0.005, 0.01), phases(0.002, 0.03, 0.05, 0.005, 0.01)};
  EXPECT_NEAR(data_parallel_efficiency(run), 0.92, 1e-9);
  EXPECT_TRUE(advise(run).empty());
  // A small batch: 8 ms of compute against 60 ms of exposed communication.
  run.phase_mean_s[phase_index(Phase::Forward)] = 0.003;
  run.phase_mean_s[phase_index(Phase::Backward)] = 0.005;
  run.phase_mean_s[phase_index(Phase::Communication)] = 0.060;
  run.per_rank_phase_s = {phases(0.002, 0.003, 0.005, 0.060, 0.01), phases(0.002, 0.003, 0.005, 0.060, 0.01)};
  auto advice = advise(run);
  ASSERT_EQ(advice.size(), 2u);  // communication-bound, then why the efficiency is low
  EXPECT_EQ(advice[1].verdict, kLowDataParallelEfficiency);
  EXPECT_TRUE(mentions(advice[1].evidence, "the median rank is busy 20.0% of the 100.0 ms step")) << advice[1].evidence;
  EXPECT_TRUE(mentions(advice[1].evidence, "cause: a small per-rank batch")) << advice[1].evidence;
  EXPECT_TRUE(mentions(advice[1].action, "train.grad_accumulation")) << advice[1].action;
  // Enough compute, still exposed: bucket size and compression.
  run.per_rank_phase_s = {phases(0.002, 0.003, 0.060, 0.060, 0.01), phases(0.002, 0.003, 0.060, 0.060, 0.01)};
  advice = advise(run);
  ASSERT_EQ(advice.size(), 2u);
  EXPECT_TRUE(mentions(advice[1].evidence, "cause: exposed communication")) << advice[1].evidence;
  EXPECT_TRUE(mentions(advice[1].action, "distributed.bucket_cap_mb")) << advice[1].action;
  // A straggler: the efficiency advice points at it.
  run.per_rank_phase_s = {phases(0.002, 0.03, 0.02, 0.05, 0.01), phases(0.002, 0.03, 0.02, 0.05, 0.01),
                          phases(0.050, 0.03, 0.02, 0.00, 0.01)};
  advice = advise(run);
  ASSERT_FALSE(advice.empty());
  EXPECT_EQ(advice.back().verdict, kLowDataParallelEfficiency);
  EXPECT_TRUE(mentions(advice.back().evidence, "cause: imbalance, the other ranks wait for the straggler named above "
                                               "(slow in data wait)"))
      << advice.back().evidence;
}

TEST(Advisor, ComputeBoundOnlyWithoutMixedPrecision) {
  auto run = healthy();
  run.mixed_precision = false;  // forward + backward + optimizer = 90%
  run.fast_precision = "amp.dtype: bf16";
  EXPECT_EQ(verdicts(run), std::vector<std::string>{kComputeBound});
  EXPECT_TRUE(mentions(advise(run)[0].action, "mixed precision (amp.dtype: bf16)"));
  // When the data is the limit, that is what to fix first.
  run.phase_mean_s[phase_index(Phase::DataWait)] = 0.05;
  EXPECT_EQ(verdicts(run), std::vector<std::string>{kDataBound});
}

// Where no low precision beats fp32 (a CPU without bf16 kernels), the advice
// for a compute-bound run must not send the user to a 5x slower setting.
TEST(Advisor, ComputeBoundSuggestsNoSlowPrecision) {
  auto run = healthy();
  run.mixed_precision = false;
  run.fast_precision.clear();
  EXPECT_EQ(verdicts(run), std::vector<std::string>{kComputeBound});
  const std::string action = advise(run)[0].action;
  EXPECT_FALSE(mentions(action, "mixed precision")) << action;
  EXPECT_FALSE(mentions(action, "bf16")) << action;
  EXPECT_TRUE(mentions(action, "full precision is the fast path")) << action;
}

TEST(Advisor, SeveralVerdictsInOrder) {
  auto run = healthy();
  run.phase_mean_s[phase_index(Phase::DataWait)] = 0.2;
  run.phase_mean_s[phase_index(Phase::Communication)] = 0.4;
  run.step_mean_s = 0.7;
  run.per_rank_step_s = {0.7, 0.7, 1.0};
  run.loss_scale_history = {65536, 32768, 16384, 8192, 4096, 2048, 1024};
  EXPECT_EQ(verdicts(run), (std::vector<std::string>{kDataBound, kCommunicationBound,
                                                     kUnstableLossScale, kStraggler}));
}

TEST(Advisor, MeasurementsFromASummary) {
  ProfileSummary s;
  s.steps = 4;
  s.step_mean_s = 0.5;
  s.phases[phase_index(Phase::Forward)].mean_s = 0.125;
  const auto run = measurements_from(s);
  EXPECT_EQ(run.steps, 4);
  EXPECT_EQ(run.fraction(Phase::Forward), 0.25);
  // Without a step time, fractions are over the phases' sum.
  RunMeasurements bare;
  bare.phase_mean_s[phase_index(Phase::DataWait)] = 1;
  bare.phase_mean_s[phase_index(Phase::Forward)] = 3;
  EXPECT_EQ(bare.fraction(Phase::DataWait), 0.25);
  EXPECT_EQ(RunMeasurements{}.fraction(Phase::Forward), 0.0);
}

TEST(Report, TableAndAdvice) {
  ProfileSummary s;
  s.steps = 10;
  s.step_total_s = 1.0;
  s.step_mean_s = 0.1;
  s.step_min_s = 0.09;
  s.step_max_s = 0.12;
  s.phases[phase_index(Phase::DataWait)] = {0.4, 0.04, 0.4};
  s.phases[phase_index(Phase::Forward)] = {0.5, 0.05, 0.5};
  s.untracked_total_s = 0.1;
  s.untracked_mean_s = 0.01;
  const auto advice = advise(measurements_from(s));
  const std::string report = format_report(s, advice);
  EXPECT_TRUE(mentions(report, "10 steps, 100.00 ms/step (min 90.00, max 120.00)")) << report;
  EXPECT_TRUE(mentions(report, "data_wait            40.00   40.0")) << report;
  EXPECT_TRUE(mentions(report, "forward              50.00   50.0")) << report;
  EXPECT_TRUE(mentions(report, "(untracked)          10.00   10.0")) << report;
  EXPECT_TRUE(mentions(report, "[data-bound]")) << report;
  EXPECT_TRUE(mentions(report, "-> ")) << report;

  EXPECT_TRUE(mentions(format_report(s, {}), "no bottleneck found"));
}

}  // namespace
