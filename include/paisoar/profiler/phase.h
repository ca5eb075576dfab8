// Phase: the parts a training step is broken into by the profiler and the
// advisor (data wait, forward, backward, exposed communication, optimizer,
// other), with their display names.
#pragma once

#include <cstddef>

namespace paisoar::profiler {

enum class Phase {
  DataWait,       // the training thread waited for the next batch
  Forward,
  Backward,       // backward's own work (exposed communication carved out, see StepProfiler::add)
  Communication,  // communication the step waited on: not hidden behind compute
  Optimizer,
  Other,          // anything else timed explicitly (logging, checkpoints, ...)
};

inline constexpr size_t kPhaseCount = 6;

// "data_wait", "forward", "backward", "communication", "optimizer", "other":
// the span names in the Chrome trace and the rows of the report.
const char* phase_name(Phase phase);

inline constexpr size_t phase_index(Phase phase) { return static_cast<size_t>(phase); }

}  // namespace paisoar::profiler
