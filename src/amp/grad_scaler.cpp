// amp::GradScaler: unscaling with an inf/NaN check, skipping, and the dynamic
// scale policy (grow after growth_interval clean steps, back off on overflow).
// The scale is a host double, not a device tensor updated by
// _amp_update_scale_ as in PyTorch: the inf/NaN verdict must be agreed across
// ranks on the host anyway (one small allreduce), so keeping the scale there
// costs no extra synchronisation and keeps the policy in readable C++.
#include "paisoar/amp/grad_scaler.h"

#include <c10/util/Exception.h>

#include <cmath>
#include <iostream>
#include <map>
#include <tuple>
#include <vector>
#include <optional>
#include <stdexcept>

#include "paisoar/comm/agreement.h"

namespace paisoar::amp {
namespace {

void check_positive(const char* name, double value) {
  if (!(value > 0) || !std::isfinite(value)) {
    C10_THROW_ERROR(ValueError, std::string("GradScaler: ") + name + " must be a positive number, got " +
                                std::to_string(value));
  }
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options, std::shared_ptr<comm::Communicator> comm)
    : options_(options), comm_(std::move(comm)), scale_(options.init_scale) {
  check_positive("init_scale", options_.init_scale);
  check_positive("backoff_factor", options_.backoff_factor);
  if (options_.growth_factor <= 1.0 || options_.backoff_factor >= 1.0) {
    C10_THROW_ERROR(ValueError, "GradScaler: growth_factor must be > 1 and backoff_factor < 1");
  }
  if (options_.growth_interval < 1) {
    C10_THROW_ERROR(ValueError, "GradScaler: growth_interval must be >= 1");
  }
}

torch::Tensor GradScaler::scale(const torch::Tensor& loss) const {
  if (!options_.enabled) return loss;
  return loss * scale_;
}

std::vector<torch::Tensor> GradScaler::params_of(torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> params;
  for (auto& group : optimizer.param_groups()) {
    for (auto& param : group.params()) params.push_back(param);
  }
  return params;
}

void GradScaler::unscale_(torch::optim::Optimizer& optimizer) {
  unscale_(&optimizer, params_of(optimizer));
}

bool GradScaler::step(torch::optim::Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  if (!should_step(&optimizer, params_of(optimizer))) return false;
  optimizer.step();
  return true;
}

void GradScaler::unscale_(OptimizerKey key, const std::vector<torch::Tensor>& params) {
  if (!options_.enabled) return;
  PerOptimizer& state = per_optimizer_[key];
  if (state.stage == Stage::Unscaled) {
    C10_THROW_ERROR(Error, "GradScaler::unscale_ was already called on this optimizer since the "
                           "last update(); call it once per step");
  }
  if (state.stage == Stage::Stepped) {
    C10_THROW_ERROR(Error, "GradScaler::unscale_ is called after step(); call it before step()");
  }
  // The reciprocal in fp32, as PyTorch computes it, so both give the same bits.
  const float inv_scale = static_cast<float>(1.0 / scale_);
  torch::NoGradGuard no_grad;
  // ATen's fused unscale-and-check (the kernel torch.amp.GradScaler uses, on
  // the CPU and on CUDA), over the gradients of each device and dtype.
  std::map<std::tuple<int, int, int>, std::vector<torch::Tensor>> groups;  // device type, index, dtype
  for (const auto& param : params) {
    torch::Tensor grad = param.grad();
    if (!grad.defined()) continue;
    if (grad.is_sparse()) {
      grad = grad.coalesce();
      const_cast<torch::Tensor&>(param).mutable_grad() = grad;
      grad = grad._values();
    }
    groups[{static_cast<int>(grad.device().type()), grad.device().index(),
            static_cast<int>(grad.scalar_type())}].push_back(grad);
  }
  bool found = false;
  for (auto& [where, grads] : groups) {
    const auto options = torch::TensorOptions().device(grads[0].device()).dtype(torch::kFloat);
    torch::Tensor found_inf = torch::zeros({1}, options);
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, torch::full({1}, inv_scale, options));
    found = found || found_inf.item<float>() != 0;
  }
  // Every rank must reach the same verdict or their parameters diverge; a rank
  // without gradients still takes part before it fails, so no peer waits.
  state.found_inf = comm::any_rank(comm_, found);
  if (groups.empty() && !params.empty()) {
    per_optimizer_.erase(key);
    C10_THROW_ERROR(ValueError, "GradScaler: none of the optimizer's " + std::to_string(params.size()) +
                                " parameters has a gradient; call scaler.scale(loss).backward() "
                                "before scaler.unscale_(optimizer) or scaler.step(optimizer)");
  }
  state.stage = Stage::Unscaled;
}

bool GradScaler::should_step(OptimizerKey key, const std::vector<torch::Tensor>& params) {
  if (!options_.enabled) return true;
  PerOptimizer& state = per_optimizer_[key];
  if (state.stage == Stage::Stepped) {
    C10_THROW_ERROR(Error, "GradScaler::step was already called on this optimizer since the last "
                           "update(); call update() once per step");
  }
  if (state.stage == Stage::Ready) unscale_(key, params);
  PerOptimizer& unscaled = per_optimizer_[key];
  unscaled.stage = Stage::Stepped;
  return !unscaled.found_inf;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  if (per_optimizer_.empty()) {
    C10_THROW_ERROR(Error, "GradScaler::update: no step() or unscale_() was recorded since the "
                           "last update(); call scaler.step(optimizer) first");
  }
  const bool found_inf = end_step();
  if (!options_.dynamic) return;
  if (found_inf) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
  } else if (++growth_tracker_ == options_.growth_interval) {
    scale_ *= options_.growth_factor;
    growth_tracker_ = 0;
  }
  if (scale_ < options_.min_scale) {
    std::string message =
        "GradScaler: the loss scale fell to " + std::to_string(scale_) + ", below min_scale " +
        std::to_string(options_.min_scale) + ", after " + std::to_string(skipped_steps_) +
        " skipped steps: gradients overflow at every scale, so training is unstable. Lower the "
        "learning rate, look for bad values in the data, or train in bf16 (no scaling needed)";
    if (options_.stop_below_min_scale) C10_THROW_ERROR(Error, message);
    if (!warned_min_scale_) std::cerr << "warning: " << message << std::endl;
    warned_min_scale_ = true;
  }
}

void GradScaler::update(double new_scale) {
  if (!options_.enabled) return;
  TORCH_CHECK_VALUE(std::isfinite(new_scale) && new_scale > 0, "GradScaler::update(new_scale): ", new_scale,
                    " is not a scale; pass a positive finite number");
  end_step();
  scale_ = new_scale;
}

bool GradScaler::end_step() {
  bool found_inf = false;
  for (const auto& [optimizer, state] : per_optimizer_) found_inf = found_inf || state.found_inf;
  per_optimizer_.clear();
  if (found_inf) ++skipped_steps_;
  return found_inf;
}

std::map<std::string, torch::Tensor> GradScaler::state_dict() const {
  auto f64 = [](double v) { return torch::tensor(v, torch::kDouble); };
  auto i64 = [](int64_t v) { return torch::tensor(v, torch::kLong); };
  return {{"scale", f64(scale_)},
          {"growth_factor", f64(options_.growth_factor)},
          {"backoff_factor", f64(options_.backoff_factor)},
          {"growth_interval", i64(options_.growth_interval)},
          {"_growth_tracker", i64(growth_tracker_)},
          {"skipped_steps", i64(skipped_steps_)}};
}

void GradScaler::load_state_dict(const std::map<std::string, torch::Tensor>& state) {
  auto number = [&](const std::string& key, bool required) -> std::optional<double> {
    auto it = state.find(key);
    if (it == state.end()) {
      if (!required) return std::nullopt;
      C10_THROW_ERROR(ValueError, "GradScaler::load_state_dict: key '" + key +
                                  "' is missing; was this state saved by a GradScaler?");
    }
    if (!it->second.defined() || it->second.numel() != 1) {
      C10_THROW_ERROR(ValueError, "GradScaler::load_state_dict: '" + key +
                                  "' must hold a single number, got a tensor of shape " +
                                  (it->second.defined() ? c10::str(it->second.sizes()) : "undefined"));
    }
    return it->second.item<double>();
  };
  const double loaded_scale = *number("scale", true);
  check_positive("scale", loaded_scale);
  GradScalerOptions next = options_;
  next.growth_factor = *number("growth_factor", true);
  next.backoff_factor = *number("backoff_factor", true);
  next.growth_interval = static_cast<int64_t>(*number("growth_interval", true));
  const auto tracker = static_cast<int64_t>(*number("_growth_tracker", true));
  const auto skipped = static_cast<int64_t>(number("skipped_steps", false).value_or(0));
  GradScaler validated(next);  // checks the loaded factors before anything changes
  options_ = next;
  scale_ = loaded_scale;
  growth_tracker_ = tracker;
  skipped_steps_ = skipped;
}

}  // namespace paisoar::amp
