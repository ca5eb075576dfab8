// Where a non-finite loss came from. The rank whose loss is NaN or inf
// re-runs that micro-batch's forward pass (no gradient, no collective; the
// model's buffers and the random generator put back after: ProbeGuard) with
// every named precision region
// (amp::in_region, the names amp.fp32_modules matches) watched, and finds the
// first region whose output holds a NaN or inf, the precision it ran in and
// whether its parameters are finite. Then it tries the fix: that region
// pinned to fp32, and again for the next region that goes non-finite (up to
// kMaxPins), until the micro-batch's loss is finite or pinning cannot help.
// non_finite_advice turns the finding into the message and the change.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "paisoar/train/trainer.h"
#include "src/config/precision_context.h"

namespace paisoar::train {

inline constexpr int kMaxPins = 4;

struct NonFiniteSource {
  bool input_finite = true;        // the micro-batch's data itself
  bool reproduced = true;          // the re-run's loss was non-finite too
  std::string region;              // the first region with a non-finite output; "": none
  std::string region_precision;    // what it ran in: "fp16", "bf16" or "fp32"
  bool region_params_finite = true;
  std::vector<std::string> pins;   // pinned to fp32 together, these make the loss finite; empty: pinning does not
};

// Re-runs `forward` and `loss` on (data, labels) under `precision` as
// described above. `model` is the module `forward` runs (its buffers, e.g.
// batch-norm statistics, are restored). Not collective.
NonFiniteSource find_non_finite_source(torch::nn::Module& model, const ForwardFn& forward, const LossFn& loss,
                                       const torch::Tensor& data, const torch::Tensor& labels,
                                       const Precision& precision);

// Where non-finite gradients came from under loss scaling (the GradScaler
// skipping step after step): the micro-batch re-run forward with the
// innermost regions watched, the scaled loss's gradients taken with respect
// to each region's input, output and parameters (autograd::grad: nothing
// accumulated, no hook), and the region named whose backward turned finite
// gradients into NaN or inf (its output's gradient finite, its input's or
// its parameters' not; the last such in forward order, the first backward
// reaches). The fix is tried as above: the region pinned to fp32 until the
// gradients are finite at this `scale`.
struct NonFiniteGradientSource {
  bool reproduced = true;        // the re-run's gradients were non-finite too
  std::string region;            // "": the loss's own gradient, or no region explains it
  std::string region_precision;  // "fp16", "bf16", "fp32"
  std::vector<std::string> pins; // pinned to fp32 together, these make the gradients finite
};
NonFiniteGradientSource find_non_finite_gradient_source(torch::nn::Module& model, const ForwardFn& forward,
                                                        const LossFn& loss, const torch::Tensor& data,
                                                        const torch::Tensor& labels, const Precision& precision,
                                                        double scale);

std::string non_finite_gradient_advice(const NonFiniteGradientSource& source, int rank, int64_t step,
                                       int64_t skipped, double scale, const torch::Tensor& indices);

// What the run prints: which rank, step, micro-batch and samples (the first
// few data set indices), the region and precision, and the change that fits:
// the exact amp.fp32_modules line (tested on this micro-batch), or a lower
// learning rate / gradient clipping / the data when pinning cannot help.
std::string non_finite_advice(const NonFiniteSource& source, int rank, int64_t step, int64_t micro,
                              const torch::Tensor& indices);

}  // namespace paisoar::train
