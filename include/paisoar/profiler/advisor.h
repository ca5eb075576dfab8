// The advisor: reads a run's measurements the way the article's
// troubleshooting table does (data-bound, communication-bound, unstable loss
// scale, straggler, compute-bound) and says what to change. Thresholds are
// named constants below; advise() on a healthy run returns nothing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "paisoar/profiler/phase.h"
#include "paisoar/profiler/profile_summary.h"

namespace paisoar::profiler {

// Data-bound: the training thread waits for batches more than 10% of the step.
// The article's sign is accelerator utilisation swinging below 80%; a loader
// that keeps up leaves next() with ~0 wait, so 10% is already lost throughput
// that more workers buy back cheaply.
inline constexpr double kDataBoundFraction = 0.10;
// Communication-bound: exposed (not overlapped) communication above 30% of the
// step (the article: "if communication passes 30%, it is the bottleneck").
inline constexpr double kCommunicationBoundFraction = 0.30;
// Unstable loss scale: it fell in more than kLossScaleMaxFalls of the last
// kLossScaleWindow updates, or ended at least 2^5 below where it started.
inline constexpr size_t kLossScaleWindow = 100;
inline constexpr size_t kLossScaleMaxFalls = 4;
inline constexpr double kLossScaleCollapseFactor = 32.0;
// Straggler: a rank's busy time per step (every phase but the communication it
// waits in) exceeds the median rank's by > 15% (by its step time when the
// phases are not known).
inline constexpr double kStragglerExcess = 0.15;
// Low data-parallel efficiency: the median rank is busy (every phase but the
// communication it waits in) less than 80% of the step, so N ranks deliver
// less than 0.8 N times what one rank with the same batch would.
inline constexpr double kDataParallelEfficiencyFloor = 0.80;
// Compute-bound: forward + backward + optimizer take more than 70% of the step
// while mixed precision is off (the article's first lever is still unused).
inline constexpr double kComputeBoundFraction = 0.70;

// Verdicts, as Advice::verdict spells them.
inline constexpr const char* kDataBound = "data-bound";
inline constexpr const char* kCommunicationBound = "communication-bound";
inline constexpr const char* kUnstableLossScale = "unstable loss scale";
inline constexpr const char* kStraggler = "straggler";
inline constexpr const char* kComputeBound = "compute-bound";
inline constexpr const char* kLowDataParallelEfficiency = "low data-parallel efficiency";

struct RunMeasurements {
  int64_t steps = 0;
  double step_mean_s = 0;                       // wall time per step
  std::array<double, kPhaseCount> phase_mean_s{};  // per step, by phase_index
  // Each rank's mean step time, indexed by rank (gather_step_times); fewer
  // than 2 entries: no straggler check.
  std::vector<double> per_rank_step_s;
  // Each rank's phase means per step, indexed by rank then phase_index (empty:
  // the straggler check compares step times only). With them the straggler
  // check names the phase a slow rank loses its time in.
  std::vector<std::array<double, kPhaseCount>> per_rank_phase_s;
  // The loss scale after each GradScaler::update(), oldest first; empty when
  // there is no scaler (bf16, fp32).
  std::vector<double> loss_scale_history;
  int64_t skipped_steps = 0;     // optimizer steps the scaler skipped (inf/NaN)
  bool mixed_precision = false;  // bf16/fp16 autocast is on
  // The low precision that runs faster than fp32 where the run is (e.g.
  // "amp.dtype: bf16"), to suggest for a compute-bound fp32 run; empty when
  // none does (a CPU without bf16 kernels), and then none is suggested.
  std::string fast_precision;

  // phase_mean_s / step_mean_s (step_mean_s 0: over the sum of the phases; 0 if that is 0 too).
  double fraction(Phase phase) const;
};

// The data-parallel efficiency the per-rank phases give: the median rank's
// busy time over the step (what one rank with the same batch would take,
// over what the step takes with the others); -1 without per-rank phases of
// at least 2 ranks.
double data_parallel_efficiency(const RunMeasurements& run);

// steps, step and phase means from a StepProfiler summary; fill in the rest.
RunMeasurements measurements_from(const ProfileSummary& summary);

struct Advice {
  std::string verdict;   // one of the k... verdicts above
  std::string evidence;  // the numbers that led to it
  std::string action;    // what to change
};

// In this order: data-bound, communication-bound, unstable loss scale,
// straggler, low data-parallel efficiency, compute-bound (only when neither
// data- nor communication-bound).
std::vector<Advice> advise(const RunMeasurements& run);

}  // namespace paisoar::profiler
