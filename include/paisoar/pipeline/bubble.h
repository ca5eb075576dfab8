// The pipeline bubble: the share of stage-time a pipelined step leaves idle,
// as the schedule implies it ((P-1)/(M+P-1)) and as a step measured it. One
// definition for `paisoar bench pipeline` and the Trainer's per-stage report.
#pragma once

#include <algorithm>
#include <vector>

#include "paisoar/pipeline/pipeline.h"

namespace paisoar::pipeline {

// (P-1)/(M+P-1): the share of stage-time GPipe and 1F1B spend idle with equal op times.
inline double bubble_formula(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / (micro_batches + stages - 1);
}

// 1 - sum of the stages' compute / (P x the slowest stage's step): the same
// definition as simulate_schedule's, so equal op times give the formula.
// `stages` holds one step's PipelineStepStats (or their means), one per stage.
// REQUIRES: !stages.empty()
inline double measured_bubble(const std::vector<PipelineStepStats>& stages) {
  double busy = 0, slowest = 0;
  for (const auto& s : stages) {
    busy += s.compute_s;
    slowest = std::max(slowest, s.step_s);
  }
  return slowest > 0 ? 1.0 - busy / (static_cast<double>(stages.size()) * slowest) : 0.0;
}

}  // namespace paisoar::pipeline
