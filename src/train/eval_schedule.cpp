// EvalSchedule: each pass is timed and its seconds taken off the training
// clock; the target is judged on the training time at the pass's end.
#include "src/train/eval_schedule.h"

#include <cstdio>

namespace paisoar::train {

EvalSchedule::EvalSchedule(const EvalConfig& config, std::function<double()> evaluate, RunReport& report,
                           util::Heartbeat& heartbeat)
    : config_(config),
      evaluate_(std::move(evaluate)),
      report_(report),
      heartbeat_(heartbeat),
      start_(std::chrono::steady_clock::now()) {}

double EvalSchedule::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void EvalSchedule::after_step(int64_t epoch, int64_t step) {
  if (evaluate_ && config_.every_steps > 0 && step % config_.every_steps == 0) evaluate_now(epoch, step);
}

void EvalSchedule::after_epoch(int64_t epoch, int64_t step, bool last) {
  const bool due = config_.every_epochs > 0 && (epoch + 1) % config_.every_epochs == 0;
  if (evaluate_ && (last || due) && evaluated_at_ != step) evaluate_now(epoch, step);
}

void EvalSchedule::evaluate_now(int64_t epoch, int64_t step) {
  const auto began = std::chrono::steady_clock::now();
  heartbeat_.beat();
  accuracy_ = evaluate_();
  heartbeat_.beat();
  eval_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  evaluated_at_ = step;
  const double trained = train_seconds();
  if (config_.target_accuracy > 0 && time_to_target_s_ < 0 && accuracy_ >= config_.target_accuracy) {
    time_to_target_s_ = trained;
    stop_ = config_.stop_at_target;
  }
  report_.evaluation(epoch, step, accuracy_, trained);
}

void EvalSchedule::score_if_unscored() {
  if (!evaluate_ || accuracy_ >= 0) return;
  accuracy_ = evaluate_();
  char line[96];
  std::snprintf(line, sizeof(line), "test accuracy %.2f%% (the checkpoint's training was complete)", accuracy_);
  report_.message(line);
}

}  // namespace paisoar::train
