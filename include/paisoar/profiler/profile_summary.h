// ProfileSummary: what StepProfiler::summary() reports for every step it saw:
// the step time and, per phase, the total, the mean per step and the share of
// the step time. Plain data; the advisor and the report read it.
#pragma once

#include <array>
#include <cstdint>

#include "paisoar/profiler/phase.h"

namespace paisoar::profiler {

struct PhaseStats {
  double total_s = 0;   // summed over all steps
  double mean_s = 0;    // total_s / steps
  double fraction = 0;  // total_s / ProfileSummary::step_total_s (0 when that is 0)
};

struct ProfileSummary {
  int64_t steps = 0;          // steps ended (end_step) so far
  double step_total_s = 0;    // wall time from begin_step to end_step, summed
  double step_mean_s = 0;
  double step_min_s = 0;      // 0 when steps == 0
  double step_max_s = 0;
  std::array<PhaseStats, kPhaseCount> phases{};
  // Step time no phase accounts for: sum over steps of max(0, step - phases).
  // Phases that overlap (nested scopes) count twice, so fractions can add up past 1.
  double untracked_total_s = 0;
  double untracked_mean_s = 0;

  const PhaseStats& operator[](Phase phase) const { return phases[phase_index(phase)]; }
};

}  // namespace paisoar::profiler
