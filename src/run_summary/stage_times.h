// StageTimes: a pipeline stage's timings summed over a run's steps, and the
// end-of-run table of every stage (forward, backward, waiting on its
// neighbours, the executor's rest, its idle share) with the measured bubble
// beside (P-1)/(M+P-1), so a pipelined run shows where its steps went.
#pragma once

#include <cstdint>
#include <string>

#include "paisoar/comm/communicator.h"
#include "paisoar/pipeline/pipeline.h"

namespace paisoar::train {

// One rank's; used by the training thread only.
class StageTimes {
 public:
  // The first step is left out of the means once a second one arrives: it
  // includes the allocator's and the links' first-use costs.
  void add(const pipeline::PipelineStepStats& step);
  // Mean per step; zeros before any step.
  pipeline::PipelineStepStats mean() const;
  int64_t steps() const { return steps_; }

 private:
  pipeline::PipelineStepStats sum_;
  int64_t steps_ = 0;
  bool first_dropped_ = false;
};

// What the report prints; `stage` is this rank's, `stages` and
// `micro_batches` the pipeline's.
struct StageLayout {
  int stage = 0;
  int stages = 1;
  int micro_batches = 1;
  std::string schedule;  // "gpipe" or "1f1b"
};

struct StageReport {
  std::string table;            // the lead's text ("" elsewhere)
  double measured_bubble = -1;  // over the stages' means, on every rank
};

// Collective over `world` (one allgather): every rank's means, grouped by
// stage (a stage's data and tensor ranks averaged).
StageReport report_stage_times(comm::Communicator& world, const StageLayout& layout, const StageTimes& times);

}  // namespace paisoar::train
