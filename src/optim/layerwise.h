// Helpers shared by paisoar's optimizers: the step closure, which parameters
// are exempt from the layer-wise trust ratio (LARS, LAMB), and the guarded ratio.
#pragma once

#include <torch/torch.h>

namespace paisoar::optim::detail {

// Biases and norm-layer weights are the 1-D parameters.
inline bool exempt(const torch::Tensor& param, bool exclude_1d) {
  return exclude_1d && param.dim() <= 1;
}

// The loss of a step's closure, evaluated with grad mode on (an undefined tensor
// without one), as torch::optim's step(closure) contract says.
inline torch::Tensor evaluate_closure(const torch::optim::Optimizer::LossClosure& closure) {
  if (!closure) return {};
  torch::AutoGradMode enable_grad(true);
  return closure();
}

// numerator / denominator as a 0-dim tensor, or 1 when either is 0 (a fresh
// zero-initialised layer, or a zero gradient), so the step is never NaN or 0 by accident.
inline torch::Tensor trust_ratio(const torch::Tensor& numerator, const torch::Tensor& denominator) {
  auto both_positive = numerator.gt(0).logical_and(denominator.gt(0));
  return torch::where(both_positive, numerator / denominator, torch::ones_like(numerator));
}

}  // namespace paisoar::optim::detail
