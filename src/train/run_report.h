// RunReport: what a Trainer run tells its user. Rank 0 shows a progress bar
// per epoch when stdout is a terminal (plain progress lines every
// train.log_every steps otherwise), evaluation results and the closing
// summary, and appends metrics as JSON lines to <run_dir>/metrics.jsonl (and,
// with logging.tensorboard, as scalars to a TensorBoard event file).
// Every rank owns one; only the lead's writes anything.
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>

#include "paisoar/format/event_file.h"
#include "paisoar/train/train_config.h"
#include "paisoar/train/trainer.h"
#include "src/util/progress_bar.h"

namespace paisoar::train {

struct StepLog {
  int64_t epoch = 0, step = 0;
  double loss = 0;          // mean over the epoch so far
  double lr = 0;
  double ms_per_step = 0;   // over the epoch so far
  double samples_per_s = 0;
  double data_wait_ms = 0;  // per micro-batch
  double backward_ms = 0, exposed_comm_ms = 0;  // of the last step
  double loss_scale = 1;
  double grad_norm = -1;    // before clipping, of the last step; -1 without optimizer.clip_grad_norm
};

class RunReport {
 public:
  // Throws c10::Error when the lead cannot write <run_dir>/metrics.jsonl.
  RunReport(const TrainConfig& config, bool lead, int64_t total_steps);
  RunReport(const RunReport&) = delete;
  RunReport& operator=(const RunReport&) = delete;

  // `steps` optimizer steps remain in this epoch.
  void begin_epoch(int64_t epoch, int64_t steps);
  // After each step; true when a StepLog is due (every log_every steps, at
  // the epoch's and the run's end): build it and pass it to log_step.
  bool step_done(int64_t step, bool epoch_end);
  void log_step(const StepLog& log);
  void end_epoch();
  // `train_s`: training time so far, evaluation excluded.
  void evaluation(int64_t epoch, int64_t step, double accuracy, double train_s);
  // A line of its own (the header, a resume, the profiler's report).
  void message(const std::string& text);
  void summary(const TrainResult& result, double target_accuracy);

 private:
  const bool lead_;
  const int64_t log_every_;
  const int64_t total_steps_;
  std::ofstream metrics_;
  std::optional<format::EventWriter> events_;  // logging.tensorboard, lead only
  std::optional<util::ProgressBar> bar_;
};

}  // namespace paisoar::train
