// EvalSchedule: when a Trainer run evaluates (every eval.every_steps steps,
// every eval.every_epochs epochs and at the end, never twice at one step),
// the time to eval.target_accuracy, eval.stop_at_target, and the training
// clock, which leaves the evaluation passes out.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "paisoar/train/train_config.h"
#include "paisoar/train/trainer.h"
#include "src/run_summary/run_report.h"
#include "src/util/heartbeat.h"

namespace paisoar::train {

class EvalSchedule {
 public:
  // `evaluate`: one collective pass returning the accuracy in percent; null:
  // there is no evaluation set and nothing is ever evaluated. The clock
  // starts now. `report` and `heartbeat` must outlive this.
  EvalSchedule(const EvalConfig& config, std::function<double()> evaluate, RunReport& report,
               util::Heartbeat& heartbeat);

  // Collective, like every call below that may evaluate: every rank calls it
  // with the same arguments. After each optimizer step.
  void after_step(int64_t epoch, int64_t step);
  // After each epoch; `last`: the run ends with it.
  void after_epoch(int64_t epoch, int64_t step, bool last);
  // At the end: a run that evaluated nothing (resumed from a finished one)
  // scores what it left.
  void score_if_unscored();

  // eval.stop_at_target, and an evaluation reached the target.
  bool stop() const { return stop_; }
  // Since construction, and the same without the evaluation passes.
  double seconds() const;
  double train_seconds() const { return seconds() - eval_seconds_; }
  // The accuracy of the last evaluation (-1: none) and the training time to
  // the target (-1: not reached), as TrainResult reports them.
  double accuracy() const { return accuracy_; }
  double time_to_target_s() const { return time_to_target_s_; }

 private:
  void evaluate_now(int64_t epoch, int64_t step);

  const EvalConfig config_;
  const std::function<double()> evaluate_;
  RunReport& report_;
  util::Heartbeat& heartbeat_;
  const std::chrono::steady_clock::time_point start_;
  double eval_seconds_ = 0;
  int64_t evaluated_at_ = -1;
  bool stop_ = false;
  double accuracy_ = -1;
  double time_to_target_s_ = -1;
};

}  // namespace paisoar::train
