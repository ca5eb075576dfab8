// Gradient clipping by global norm (torch::nn::utils::clip_grad_norm_'s
// numbers), also right for loss-scaled gradients (GradScaler) and for gradients
// sharded across ranks (ZeRO, tensor parallel), where the norm is of all ranks'.
#pragma once

#include <torch/types.h>

#include <memory>
#include <vector>

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::optim {

struct ClipGradNormOptions {
  // 2 (Euclidean), or std::numeric_limits<double>::infinity() (largest |g|).
  double norm_type = 2.0;
  // Throw c10::Error when the total norm is inf/NaN. Off: return that norm and
  // leave the gradients as they are (with a GradScaler, its step then skips).
  bool error_if_nonfinite = false;
  // The gradients hold grad_scale times the true gradients: pass a GradScaler's
  // get_scale() when clipping before its unscale_(). The norm returned and
  // compared with max_norm is the true gradients'; they stay scaled, multiplied
  // by the same coefficient unscale-then-clip would apply. 1: not scaled.
  double grad_scale = 1.0;
  // Set when each rank of `comm` holds a disjoint part of the gradients (ZeRO
  // shards, tensor-parallel slices): the norm is over all ranks' parts (one
  // 1-element allreduce), so every rank gets the same norm and coefficient.
  // Then the call is a collective: every rank of comm makes it, with the same
  // norm_type, even a rank with no gradients. A gradient replicated on several
  // ranks (a tensor-parallel LayerNorm weight) must be passed on one of them
  // only. Leave null for data parallel: there every rank holds all gradients.
  std::shared_ptr<comm::Communicator> comm;
  // Gradients scaled by the same coefficient but left out of the norm: the
  // copies of a replicated gradient that another rank of `comm` counts (a
  // tensor-parallel LayerNorm weight on tensor ranks other than 0).
  std::vector<torch::Tensor> uncounted;
};

// Scales the gradients of `parameters` in place so that their total norm is at
// most max_norm: by max_norm / (norm + 1e-6) when that is below 1, as PyTorch
// does. Returns the total norm before clipping (of the true gradients when
// grad_scale != 1). max_norm = infinity only measures the norm.
// - Parameters without a gradient are skipped; sparse gradients are rejected.
// - The norm is accumulated in fp32 for bf16/fp16 gradients and summed across
//   tensors (and ranks) in fp64; reading it is the one host sync.
// - A non-finite norm clips nothing (see error_if_nonfinite).
// With a GradScaler either call scaler.unscale_(optimizer) first (PyTorch's
// recipe) or pass grad_scale = scaler.get_scale() and clip before unscale_.
// Throws c10::Error for norm_type other than 2 or inf, max_norm <= 0, or
// grad_scale not positive and finite.
double clip_grad_norm_(const std::vector<torch::Tensor>& parameters, double max_norm,
                       const ClipGradNormOptions& options = {});

}  // namespace paisoar::optim
