// LogWindow: what a logged step reports beyond the epoch's running figures,
// over the steps since the previous logged step: the mean time of each step
// phase (from the step profiler), and every rank's step time, busy time and
// memory (one allgather), so stragglers and memory growth show per rank.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>

#include "paisoar/profiler/profile_summary.h"
#include "src/run_summary/run_report.h"

namespace paisoar::comm {
class Communicator;
}
namespace paisoar::profiler {
class StepProfiler;
}

namespace paisoar::train {

class LogWindow {
 public:
  // The first window starts at `step` (the run's first, or the resumed one),
  // at training time 0.
  explicit LogWindow(int64_t step) : step_(step) {}

  // Collective over `world`: every rank calls it at the same logged steps.
  // Fills log.phases_ms (profiler on) and log.ranks with the window ending
  // after step `step` at training time `train_s`, then starts the next.
  // `exposed_comm_s`: the last step's, used for busy time when the profiler is off.
  // log.loss becomes the mean of `loss` (this rank's epoch mean; a
  // pipeline gives every stage the loss) over the ranks, so it is the global
  // batch's loss whatever the number of ranks.
  void close(comm::Communicator& world, const profiler::StepProfiler& prof, int64_t step, double train_s,
             double exposed_comm_s, c10::Device device, double loss, StepLog& log);

 private:
  int64_t step_;
  double train_s_ = 0;
  profiler::ProfileSummary last_;  // the profiler's totals at the window's start
};

}  // namespace paisoar::train
