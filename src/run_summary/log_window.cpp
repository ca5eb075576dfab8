// LogWindow: differences of the profiler's running totals give the window's
// phase means; one allgather of [step ms, busy ms, resident MB, allocated MB,
// epoch mean loss]
// gives the ranks' figures.
#include "src/run_summary/log_window.h"

#include <algorithm>

#include "paisoar/memory/device_memory.h"
#include "paisoar/profiler/rank_step_times.h"
#include "paisoar/profiler/step_profiler.h"

namespace paisoar::train {
namespace {

constexpr double kLogMiB = 1024.0 * 1024.0;

double megabytes(int64_t bytes) { return bytes < 0 ? -1 : static_cast<double>(bytes) / kLogMiB; }

}  // namespace

void LogWindow::close(comm::Communicator& world, const profiler::StepProfiler& prof, int64_t step,
                      double train_s, double exposed_comm_s, c10::Device device, double loss,
                      StepLog& log) {
  const int64_t steps = std::max<int64_t>(step - step_, 1);
  const double step_ms = 1e3 * (train_s - train_s_) / static_cast<double>(steps);
  const profiler::ProfileSummary now = prof.summary();
  const int64_t profiled = now.steps - last_.steps;
  double comm_ms = 1e3 * exposed_comm_s;
  log.phases_ms.clear();
  if (profiled > 0) {
    for (size_t i = 0; i < profiler::kPhaseCount; ++i) {
      const double ms = 1e3 * (now.phases[i].total_s - last_.phases[i].total_s) / static_cast<double>(profiled);
      log.phases_ms.emplace_back(profiler::phase_name(static_cast<profiler::Phase>(i)), ms);
    }
    comm_ms = log.phases_ms[profiler::phase_index(profiler::Phase::Communication)].second;
  }
  int64_t allocated = -1;
  if (device.is_cpu() || device.is_cuda()) allocated = memory::device_memory(device).current_bytes;
  const auto rows = profiler::gather_rank_rows(
      world, {step_ms, std::max(step_ms - comm_ms, 0.0), megabytes(memory::resident_bytes()), megabytes(allocated),
              loss});
  log.ranks.clear();
  double loss_sum = 0;
  for (const auto& row : rows) {
    log.ranks.push_back(RankLog{row[0], row[1], row[2], row[3]});
    loss_sum += row[4];
  }
  log.loss = loss_sum / static_cast<double>(rows.size());
  step_ = step;
  train_s_ = train_s;
  last_ = now;
}

}  // namespace paisoar::train
