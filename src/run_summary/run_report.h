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
#include <utility>
#include <vector>

#include "paisoar/format/event_file.h"
#include "paisoar/memory/memory_report.h"
#include "paisoar/profiler/advisor.h"
#include "paisoar/train/train_config.h"
#include "paisoar/train/trainer.h"
#include "src/util/progress_bar.h"

namespace paisoar::train {

// One rank's figures over the steps since the previous logged step (LogWindow).
struct RankLog {
  double step_ms = 0;       // wall time per step
  double busy_ms = 0;       // step_ms less the communication it waited on: the slowest rank has the most
  double resident_mb = -1;  // the process's resident memory (-1: unknown)
  double allocated_mb = -1; // the device allocator's current bytes (-1: not measured, e.g. CPU without profiler.memory)
};

struct StepLog {
  int64_t epoch = 0, step = 0;
  double loss = 0;          // mean over the epoch so far
  double lr = 0;
  double ms_per_step = 0;   // over the epoch so far
  double samples_per_s = 0;
  double data_wait_ms = 0;  // per micro-batch
  double backward_ms = 0, exposed_comm_ms = 0;  // of the last step
  double loss_scale = 1;
  double grad_norm = -1;    // of the last step, before any clipping; -1: not measured (a skipped step)
  // Mean ms per step of each phase since the previous logged step, by
  // profiler::phase_name; empty with the profiler off.
  std::vector<std::pair<std::string, double>> phases_ms;
  std::vector<RankLog> ranks;  // indexed by rank; empty when not gathered
};

class RunReport {
 public:
  // Throws c10::Error when the lead cannot write <run_dir>/metrics.jsonl.
  RunReport(const TrainConfig& config, bool lead, int64_t total_steps);
  RunReport(const RunReport&) = delete;
  RunReport& operator=(const RunReport&) = delete;

  // The lead's first record of this run in metrics.jsonl: the step it starts
  // at (a resumed run's overlaps what the file holds), the world size and the
  // whole config, so `paisoar report` can tell runs and configs apart.
  void run_start(int64_t step, int world_size, const std::string& config_text);
  // `steps` optimizer steps remain in this epoch.
  void begin_epoch(int64_t epoch, int64_t steps);
  // Whether step `step` (counted from 1) is logged: every log_every steps, at
  // the epoch's and the run's end. The same on every rank (logging gathers
  // the ranks' figures).
  bool log_due(int64_t step, bool epoch_end) const;
  // After each step: advances the lead's progress bar.
  void step_done();
  void log_step(const StepLog& log);
  // The profiler's verdicts at the run's end, as a record the report shows
  // beside the plot that shows each.
  void advice(int64_t step, const std::vector<profiler::Advice>& advice);
  // The end-of-run memory table as a "memory" record: per rank the allocator's
  // peak and what the state held (paisoar bench plan compares its prediction).
  void memory(int64_t step, const std::vector<memory::MemoryReport>& reports);
  void end_epoch();
  // `train_s`: training time so far, evaluation excluded.
  void evaluation(int64_t epoch, int64_t step, double accuracy, double train_s);
  // A line of its own (the header, a resume, the profiler's report).
  void message(const std::string& text);
  void summary(const TrainResult& result, double target_accuracy);
  // The lead's line and metrics record for samples dropped under
  // data.on_error: skip (`why`: the first few reasons, each naming its
  // sample), and a warning on stderr when more than `warn_share` of those
  // read were; nothing when none was.
  void skipped_samples(int64_t step, int64_t skipped, int64_t read, const std::vector<std::string>& why,
                       double warn_share);

 private:
  const bool lead_;
  const int64_t log_every_;
  const int64_t total_steps_;
  std::ofstream metrics_;
  std::optional<format::EventWriter> events_;  // logging.tensorboard, lead only
  std::optional<util::ProgressBar> bar_;
};

}  // namespace paisoar::train
