// clip_grad_norm_: per-tensor norms (fused by _foreach_norm per dtype), one
// fp64 reduction (and allreduce across shards), one host read, then mul_.
#include "paisoar/optim/grad_clip.h"

#include <ATen/ops/_foreach_norm.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <map>

#include "paisoar/comm/communicator.h"

namespace paisoar::optim {
namespace {

bool is_inf_norm(double norm_type) {
  return norm_type == std::numeric_limits<double>::infinity();
}

// The norm of each gradient as one 1-D fp64 tensor (any order). fp32/fp64
// gradients go through _foreach_norm (one fused kernel per dtype where the
// device has one); bf16/fp16 ones are normed with fp32 accumulation and an fp32
// result, so the per-tensor norm is not rounded to 8 or 11 bits.
torch::Tensor per_tensor_norms(const std::vector<torch::Tensor>& grads, double norm_type) {
  std::map<c10::ScalarType, std::vector<torch::Tensor>> by_dtype;
  for (const auto& g : grads) by_dtype[g.scalar_type()].push_back(g);
  std::vector<torch::Tensor> parts;
  for (auto& [dtype, same] : by_dtype) {
    std::vector<torch::Tensor> norms;
    if (dtype == torch::kFloat || dtype == torch::kDouble) {
      norms = at::_foreach_norm(same, norm_type);
    } else {
      TORCH_CHECK(at::isFloatingType(dtype), "clip_grad_norm_: gradients must be floating point, got ",
                  dtype);
      for (const auto& g : same) norms.push_back(at::linalg_vector_norm(g, norm_type, c10::nullopt,
                                                                        false, torch::kFloat));
    }
    parts.push_back(torch::stack(norms).to(torch::kDouble));
  }
  return torch::cat(parts);
}

}  // namespace

double clip_grad_norm_(const std::vector<torch::Tensor>& parameters, double max_norm,
                       const ClipGradNormOptions& options) {
  const bool inf_norm = is_inf_norm(options.norm_type);
  TORCH_CHECK(options.norm_type == 2.0 || inf_norm, "clip_grad_norm_: norm_type must be 2 or ",
              "infinity (std::numeric_limits<double>::infinity()), got ", options.norm_type);
  TORCH_CHECK(max_norm > 0, "clip_grad_norm_: max_norm must be > 0 (infinity only measures), got ",
              max_norm);
  TORCH_CHECK(options.grad_scale > 0 && std::isfinite(options.grad_scale),
              "clip_grad_norm_: grad_scale must be positive and finite (the GradScaler's get_scale(), "
              "or 1 for unscaled gradients), got ", options.grad_scale);
  torch::NoGradGuard no_grad;

  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters) {
    const torch::Tensor& g = p.grad();
    if (!g.defined()) continue;
    TORCH_CHECK(!g.is_sparse(), "clip_grad_norm_: sparse gradients are not supported; clip them "
                "with torch::nn::utils::clip_grad_norm_ or make them dense");
    grads.push_back(g);
  }
  const bool sharded = options.comm && options.comm->size() > 1;
  if (grads.empty() && !sharded) return 0.0;

  // Sum of squares (2) or max (inf) of this rank's gradients, 1 element, fp64.
  // A rank without gradients still joins the allreduce, with 0, on the device
  // of its first parameter (NCCL needs a CUDA tensor), else the CPU.
  torch::Tensor local;
  if (grads.empty()) {
    local = torch::zeros({1}, torch::TensorOptions(torch::kDouble)
                                  .device(parameters.empty() ? torch::kCPU : parameters[0].device()));
  } else {
    torch::Tensor norms = per_tensor_norms(grads, options.norm_type);
    local = (inf_norm ? norms.max() : norms.square().sum()).reshape({1});
  }
  if (sharded) {
    options.comm->allreduce(local, inf_norm ? comm::ReduceOp::Max : comm::ReduceOp::Sum).wait();
  }
  const double reduced = local.item<double>();
  const double total = (inf_norm ? reduced : std::sqrt(reduced)) / options.grad_scale;

  if (!std::isfinite(total)) {
    TORCH_CHECK(!options.error_if_nonfinite, "clip_grad_norm_: the total norm of order ",
                options.norm_type, " of the gradients is ", total, ", so they cannot be clipped. "
                "With a GradScaler, leave error_if_nonfinite off: the scaler skips this step and "
                "lowers the scale; otherwise look for the inf/NaN in the loss or the data");
    return total;
  }
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1.0) {
    for (auto& g : grads) g.mul_(coef);
    for (const auto& p : options.uncounted) {
      if (p.grad().defined()) p.grad().mul_(coef);
    }
  }
  return total;
}

}  // namespace paisoar::optim
