// parse_recovery and step_gaps on a hand-written restarted run in the
// launcher's and the Trainer's line formats (docs/LAUNCH.md, docs/TRAIN.md):
// the times come out of the right lines, and a run that did not restart or
// resume is an error, not a measurement.
#include <gtest/gtest.h>

#include "bench/recovery_timeline.h"
#include "tests/support/expect_error.h"

namespace paisoar::bench {
namespace {

std::vector<TimedLine> restarted_run() {
  return {{0.50, false, "[rank0]: paisoar train: 1280 samples, 2 ranks x 32 x 1 accumulation = batch 64, fp32"},
          {0.60, false, "[rank0]: epoch 0 step 1/12  loss 2.3000  lr 0.0100  60 ms/step"},
          {0.70, false, "[rank0]: epoch 0 step 2/12  loss 2.2000  lr 0.0200  55 ms/step"},
          {0.95, false, "[rank0]: epoch 0 step 3/12  loss 2.1000  lr 0.0300  60 ms/step"},
          {1.05, false, "[rank0]: epoch 0 step 4/12  loss 2.0000  lr 0.0400  58 ms/step"},
          {1.15, false, "[rank0]: epoch 0 step 5/12  loss 1.9000  lr 0.0500  57 ms/step"},
          {1.16, true, "[rank0]: terminate called after a gloo error"},
          {1.17, true, "paisoar launch: rank 1 (local_rank 1, pid 4321) was killed by signal 9 (SIGKILL)"},
          {1.40, true, "paisoar launch: rank 0 (local_rank 0, pid 4320) exited with code 1"},
          {1.41, true, "paisoar launch: restarting the group (restart 1 of 1)"},
          {3.00, false, "[rank0]: resumed from /tmp/r/checkpoints/step-000000000003.safetensors at step 3"},
          {3.10, false, "[rank0]: paisoar train: 1280 samples, 2 ranks x 32 x 1 accumulation = batch 64, fp32"},
          {3.30, false, "[rank0]: epoch 0 step 4/12  loss 2.0000  lr 0.0400  58 ms/step"},
          {3.40, false, "[rank0]: epoch 0 step 5/12  loss 1.9000  lr 0.0500  57 ms/step"},
          {3.50, false, "[rank1]: epoch 0 step 6/12  (another rank's line is not rank 0's)"}};
}

TEST(RecoveryTimeline, ReadsTheDeathTheRestartAndTheResume) {
  const RecoveryTimeline t = parse_recovery(restarted_run());
  EXPECT_DOUBLE_EQ(t.started_s, 0.50);
  EXPECT_DOUBLE_EQ(t.noticed_s, 1.17);  // the first failure, not rank 0's exit after it
  EXPECT_NE(t.failure.find("rank 1"), std::string::npos);
  EXPECT_DOUBLE_EQ(t.restart_s, 1.41);
  EXPECT_DOUBLE_EQ(t.resumed_s, 3.00);
  EXPECT_EQ(t.resumed_step, 3);
  EXPECT_DOUBLE_EQ(t.header_s, 3.10);
  ASSERT_EQ(t.steps_before.size(), 5u);
  EXPECT_DOUBLE_EQ(t.steps_before.at(5), 1.15);
  ASSERT_EQ(t.steps_after.size(), 2u);
  EXPECT_EQ(t.steps_after.begin()->first, 4);
  EXPECT_DOUBLE_EQ(t.steps_after.at(4), 3.30);
}

TEST(RecoveryTimeline, StepGapsAreTheTimesBetweenConsecutiveReports) {
  const auto gaps = step_gaps(parse_recovery(restarted_run()).steps_before, 2, 5);
  ASSERT_EQ(gaps.size(), 4u);
  EXPECT_NEAR(gaps.at(2), 0.10, 1e-12);
  EXPECT_NEAR(gaps.at(3), 0.25, 1e-12);
  EXPECT_NEAR(gaps.at(5), 0.10, 1e-12);
  EXPECT_TRUE(step_gaps({{1, 0.0}, {3, 1.0}}, 2, 3).empty()) << "a missing step has no gap on either side";
}

TEST(RecoveryTimeline, ParseStepsKeepsRankZerosStepLinesOnly) {
  const auto steps = parse_steps(restarted_run());
  EXPECT_EQ(steps.size(), 5u);  // steps 1-5; the repeated 4 and 5 keep their first report
  EXPECT_DOUBLE_EQ(steps.at(4), 1.05);
  EXPECT_EQ(steps.count(6), 0u);
}

TEST(RecoveryTimeline, ARunWithoutARestartOrResumeIsAnError) {
  auto lines = restarted_run();
  lines.erase(lines.begin() + 9);  // the restart line
  testing::expect_error_of<std::runtime_error>([&] { parse_recovery(lines); }, {"the launcher's restart"});
  lines = restarted_run();
  lines.erase(lines.begin() + 10);  // the resume line
  testing::expect_error_of<std::runtime_error>([&] { parse_recovery(lines); }, {"\"resumed from\" line"});
  lines = restarted_run();
  lines.resize(12);  // nothing after the restarted header
  testing::expect_error_of<std::runtime_error>([&] { parse_recovery(lines); },
                                               {"a training step after the restart", "step 5/12"});
}

}  // namespace
}  // namespace paisoar::bench
