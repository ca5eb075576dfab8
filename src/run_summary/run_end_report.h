// The reports at the end of a Trainer run, after the summary's figures are
// known: the profiler's breakdown with its advice, and the per-rank memory
// table. Both gather from every rank; the lead's RunReport prints them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "paisoar/comm/communicator.h"
#include "paisoar/memory/memory_report.h"
#include "paisoar/profiler/step_profiler.h"
#include "src/run_summary/run_report.h"

namespace paisoar::train {

// What the steps leave for the end-of-run reports (this rank's).
struct RunStats {
  std::vector<double> loss_scales;  // after each update, when the loss is scaled (for the advisor)
  int64_t skipped_steps = 0;        // no update: a non-finite loss or inf/NaN gradients
  int64_t peak_step_bytes = -1;     // the most a step allocated above its start (profiler.memory)
  std::vector<double> save_wait_s;  // how long the step waited for each periodic checkpoint save
};

// Collective over `world`: every rank's mean step time and phase means are
// gathered; the lead prints the profile, the advisor's verdicts and the
// data-parallel efficiency, and records the verdicts (after step `step`) in
// metrics.jsonl. `fast_precision`: what to suggest for a compute-bound fp32
// run ("" : nothing is faster here). `replicas_only`: every rank does the
// same work (no pipeline stages, no tensor shards); otherwise the ranks'
// phases are not compared (stages differ by design) and only step times are.
void report_profile(RunReport& report, comm::Communicator& world, int64_t step,
                    const profiler::StepProfiler& prof, const RunStats& stats, bool mixed_precision,
                    const std::string& fast_precision, bool replicas_only);

// Collective over `world`: every rank's memory (`mine`, its peak step added) is gathered; the lead prints the table.
void report_memory(RunReport& report, comm::Communicator& world, int64_t step, memory::MemoryReport mine,
                   const RunStats& stats);

}  // namespace paisoar::train
