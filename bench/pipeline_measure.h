// What `paisoar bench pipeline` computes from a step's per-stage statistics:
// the bubble formula, the measured bubble (the same definition as
// simulate_schedule's, so equal op times give the formula), and the relative
// distance the targets are stated in.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "paisoar/pipeline/pipeline.h"

namespace paisoar::bench {

// (P-1)/(M+P-1): the share of stage-time GPipe and 1F1B spend idle with equal op times.
inline double bubble_formula(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / (micro_batches + stages - 1);
}

// 1 - sum of the stages' compute / (P x the slowest stage's step).
// `stages` holds one step's PipelineStepStats, one per stage. REQUIRES: !stages.empty()
inline double measured_bubble(const std::vector<pipeline::PipelineStepStats>& stages) {
  double busy = 0, slowest = 0;
  for (const auto& s : stages) {
    busy += s.compute_s;
    slowest = std::max(slowest, s.step_s);
  }
  return slowest > 0 ? 1.0 - busy / (static_cast<double>(stages.size()) * slowest) : 0.0;
}

// |measured - reference| / reference; 0 when both are 0.
inline double relative_gap(double measured, double reference) {
  if (reference == 0) return measured == 0 ? 0.0 : INFINITY;
  return std::abs(measured - reference) / std::abs(reference);
}

}  // namespace paisoar::bench
