// EvalSchedule against a scripted evaluation: passes every eval.every_steps
// steps and every eval.every_epochs epochs and at the end, never twice at one
// step; the first pass at the target sets the time to it, and stops the run
// only under eval.stop_at_target; a run that scored nothing scores once at the end.
#include <gtest/gtest.h>

#include <vector>

#include "src/train/eval_schedule.h"

using namespace paisoar::train;

namespace {

// What a run of 5 steps per epoch over 3 epochs, cut at step 12, evaluated:
// the steps of the scripted passes, in order.
struct ScriptedRun {
  std::vector<int64_t> evaluated_at;
  double accuracy = -1, time_to_target_s = -1;
  bool stopped = false;
};

ScriptedRun run_script(EvalConfig config, std::vector<double> scores) {
  ScriptedRun out;
  TrainConfig quiet;
  RunReport report(quiet, /*lead=*/false, 12);
  paisoar::util::Heartbeat heartbeat;
  int64_t step = 0;
  EvalSchedule evals(config, [&] {
    out.evaluated_at.push_back(step);
    return scores.at(out.evaluated_at.size() - 1);
  }, report, heartbeat);
  for (int64_t epoch = 0; epoch < 3 && step < 12 && !evals.stop(); ++epoch) {
    for (int64_t i = 0; i < 5 && step < 12 && !evals.stop(); ++i) {
      ++step;
      evals.after_step(epoch, step);
    }
    evals.after_epoch(epoch, step, epoch + 1 == 3 || step >= 12 || evals.stop());
  }
  evals.score_if_unscored();
  out.accuracy = evals.accuracy();
  out.time_to_target_s = evals.time_to_target_s();
  out.stopped = evals.stop();
  return out;
}

}  // namespace

TEST(EvalSchedule, EvaluatesWhenDueAndNeverTwiceAtOneStep) {
  EvalConfig c;
  c.every_epochs = 2;
  c.every_steps = 5;
  c.target_accuracy = 50;
  const ScriptedRun run = run_script(c, {10, 60, 70});
  // Step 5 (every_steps; epoch 0 is not due), 10 (every_steps; epoch 1's end
  // is due but scored already), 12 (the end).
  EXPECT_EQ(run.evaluated_at, (std::vector<int64_t>{5, 10, 12}));
  EXPECT_EQ(run.accuracy, 70);
  EXPECT_GE(run.time_to_target_s, 0);  // reached at step 10
  EXPECT_FALSE(run.stopped);
}

TEST(EvalSchedule, StopsAtTheTargetOnlyWhenAsked) {
  EvalConfig c;
  c.every_epochs = 1;
  c.target_accuracy = 50;
  c.stop_at_target = true;
  const ScriptedRun run = run_script(c, {60, 70, 80});
  EXPECT_EQ(run.evaluated_at, (std::vector<int64_t>{5}));  // the epoch-0 pass reaches it: the run ends
  EXPECT_TRUE(run.stopped);
  c.target_accuracy = 90;  // never reached: every epoch's end, no time to target
  const ScriptedRun missed = run_script(c, {60, 70, 80});
  EXPECT_EQ(missed.evaluated_at, (std::vector<int64_t>{5, 10, 12}));
  EXPECT_LT(missed.time_to_target_s, 0);
  EXPECT_FALSE(missed.stopped);
}

TEST(EvalSchedule, ARunThatScoredNothingScoresOnceAtTheEnd) {
  EvalConfig c;
  c.every_epochs = 0;  // only at the end, which after_epoch's `last` covers
  EXPECT_EQ(run_script(c, {42}).evaluated_at, (std::vector<int64_t>{12}));
  // Resumed from a finished run: no epoch runs, the end scores once.
  TrainConfig quiet;
  RunReport report(quiet, false, 1);
  paisoar::util::Heartbeat heartbeat;
  int calls = 0;
  EvalSchedule finished(c, [&] { return 40.0 + ++calls; }, report, heartbeat);
  finished.score_if_unscored();
  finished.score_if_unscored();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(finished.accuracy(), 41);
  // Without an evaluation function nothing is ever evaluated.
  EvalSchedule none(c, nullptr, report, heartbeat);
  none.after_step(0, 1);
  none.after_epoch(0, 1, true);
  none.score_if_unscored();
  EXPECT_EQ(none.accuracy(), -1);
}
