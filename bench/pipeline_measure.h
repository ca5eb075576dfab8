// What `paisoar bench pipeline` computes from a step's per-stage statistics:
// the bubble formula and the measured bubble (paisoar/pipeline/bubble.h), and
// the relative distance the targets are stated in.
#pragma once

#include <cmath>
#include <vector>

#include "paisoar/pipeline/bubble.h"

namespace paisoar::bench {

// The bubble's formula and measurement live with the pipeline (bubble.h).
using pipeline::bubble_formula;
using pipeline::measured_bubble;

// |measured - reference| / reference; 0 when both are 0.
inline double relative_gap(double measured, double reference) {
  if (reference == 0) return measured == 0 ? 0.0 : INFINITY;
  return std::abs(measured - reference) / std::abs(reference);
}

}  // namespace paisoar::bench
