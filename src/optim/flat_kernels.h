// Fused optimizer kernels over flat buffers for the layer-wise algorithms ATen
// has no fused kernel for: a pass for the per-parameter norms, one for the
// update, parallel over parameters. (SGD and AdamW use ATen's _fused_sgd_ and
// _fused_adamw_: flat_optimizer.cpp.)
#pragma once

#include <cstdint>
#include <vector>

namespace paisoar::optim::detail {

// A parameter's place in the flat buffers, and whether it is exempt from
// weight decay and the trust ratio (LARS, LAMB).
struct Segment {
  int64_t offset;
  int64_t numel;
  bool exempt;
};

struct FlatHyper {
  double lr, weight_decay, momentum, beta1, beta2, eps, eta;
  int64_t step;  // 1 for the first step (LAMB bias correction)
  bool bias_correction;
};

// T is float or double. p: parameters, g: gradients, s1/s2: optimizer state
// (momentum, or LAMB's exp_avg / exp_avg_sq), scratch: a buffer of the same size (LAMB).
template <typename T>
void lars_step(T* p, const T* g, T* s1, const std::vector<Segment>& segs, const FlatHyper& h);
template <typename T>
void lamb_step(T* p, const T* g, T* s1, T* s2, T* scratch, const std::vector<Segment>& segs,
               const FlatHyper& h);

}  // namespace paisoar::optim::detail
