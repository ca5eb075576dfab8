// Helpers shared by the layer-wise adaptive optimizers (LARS, LAMB): which
// parameters are exempt, and the guarded trust ratio.
#pragma once

#include <torch/torch.h>

namespace paisoar::optim::detail {

// Biases and norm-layer weights are the 1-D parameters.
inline bool exempt(const torch::Tensor& param, bool exclude_1d) {
  return exclude_1d && param.dim() <= 1;
}

// numerator / denominator as a 0-dim tensor, or 1 when either is 0 (a fresh
// zero-initialised layer, or a zero gradient), so the step is never NaN or 0 by accident.
inline torch::Tensor trust_ratio(const torch::Tensor& numerator, const torch::Tensor& denominator) {
  auto both_positive = numerator.gt(0).logical_and(denominator.gt(0));
  return torch::where(both_positive, numerator / denominator, torch::ones_like(numerator));
}

}  // namespace paisoar::optim::detail
