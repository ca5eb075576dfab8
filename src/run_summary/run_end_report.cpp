// report_profile and report_memory: one gather each, in this order on every rank.
#include "src/run_summary/run_end_report.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "paisoar/profiler.h"
#include "src/run_summary/memory_table.h"

namespace paisoar::train {

void report_profile(RunReport& report, comm::Communicator& world, int64_t step,
                    const profiler::StepProfiler& prof, const RunStats& stats, bool mixed_precision,
                    const std::string& fast_precision, bool replicas_only) {
  const auto summary = prof.summary();
  auto run = profiler::measurements_from(summary);
  // One gather: each rank's step time and phase means.
  std::vector<double> mine = {run.step_mean_s};
  mine.insert(mine.end(), run.phase_mean_s.begin(), run.phase_mean_s.end());
  for (const auto& row : profiler::gather_rank_rows(world, mine)) {
    run.per_rank_step_s.push_back(row[0]);
    std::array<double, profiler::kPhaseCount> phases{};
    std::copy(row.begin() + 1, row.end(), phases.begin());
    if (replicas_only) run.per_rank_phase_s.push_back(phases);
  }
  run.loss_scale_history = stats.loss_scales;
  run.skipped_steps = stats.skipped_steps;
  run.mixed_precision = mixed_precision;
  run.fast_precision = fast_precision;
  if (world.rank() == 0) {
    const auto advice = profiler::advise(run);
    std::string text = profiler::format_report(summary, advice);
    if (const double e = profiler::data_parallel_efficiency(run); e >= 0) {
      char line[200];
      std::snprintf(line, sizeof line,
                    "data-parallel efficiency %.2f: the median rank is busy %.0f%% of the step, the rest it waits "
                    "for the others and the gradients (below %.2f the advice says why)\n",
                    e, 100 * e, profiler::kDataParallelEfficiencyFloor);
      text += line;
    }
    report.message(text);
    report.advice(step, advice);
  }
}

void report_memory(RunReport& report, comm::Communicator& world, int64_t step, memory::MemoryReport mine,
                   const RunStats& stats) {
  mine.peak_activation_bytes = stats.peak_step_bytes;
  const auto reports = gather_memory_reports(world, mine);
  if (world.rank() == 0) {
    report.message("memory per rank (peak act: the most one step allocated above its start)\n" +
                   memory::format_memory_reports(reports));
    report.memory(step, reports);
  }
}

}  // namespace paisoar::train
