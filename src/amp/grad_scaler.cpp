// amp::GradScaler: PyTorch's loss scaling with PyTorch's numbers. The scale
// and growth tracker are 0-dim tensors on the scale's device, moved by ATen's
// own kernels (the fused unscale-and-check, _amp_update_scale_), so the scale
// stays a float32 and its trajectory is torch.amp.GradScaler's bit for bit.
// paisoar's additions: the verdict agreed across a group, the skip count,
// the min-scale floor.
#include "paisoar/amp/grad_scaler.h"

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <cmath>
#include <iostream>
#include <map>
#include <utility>
#include <vector>

#include "paisoar/comm/agreement.h"

namespace paisoar::amp {
namespace {

void check_positive(const char* name, double value) {
  if (!(value > 0) || !std::isfinite(value)) {
    C10_THROW_ERROR(ValueError, std::string("GradScaler: ") + name + " must be a positive number, got " +
                                    std::to_string(value));
  }
}

void check_factors(double growth_factor, double backoff_factor, int64_t growth_interval) {
  check_positive("backoff_factor", backoff_factor);
  if (!(growth_factor > 1.0) || !std::isfinite(growth_factor) || !(backoff_factor < 1.0)) {
    C10_THROW_ERROR(ValueError, "GradScaler: growth_factor must be > 1 and backoff_factor in (0, 1), got " +
                                    std::to_string(growth_factor) + " and " + std::to_string(backoff_factor));
  }
  if (growth_interval < 1) {
    C10_THROW_ERROR(ValueError, "GradScaler: growth_interval must be >= 1, got " + std::to_string(growth_interval));
  }
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options, std::shared_ptr<comm::Communicator> verdict_group)
    : options_(options), verdict_group_(std::move(verdict_group)), init_scale_(options.init_scale) {
  if (!options_.enabled) return;  // a disabled scaler's numbers are never used (PyTorch checks none)
  check_positive("init_scale", options_.init_scale);
  check_factors(options_.growth_factor, options_.backoff_factor, options_.growth_interval);
  if (options_.device) place_scale(*options_.device);
}

void GradScaler::place_scale(c10::Device device) {
  const auto on = torch::TensorOptions().device(device);
  scale_ = torch::full({}, init_scale_, on.dtype(torch::kFloat));
  growth_tracker_ = torch::full({}, init_growth_tracker_, on.dtype(torch::kInt));
  skipped_steps_ = torch::full({}, init_skipped_steps_, on.dtype(torch::kLong));
}

void GradScaler::require_scale(const char* call) const {
  if (scale_.defined()) return;
  throw GradScalerStateError(std::string("Attempted ") + call +
                             " but the scale is not placed yet: this script did not call "
                             "scaler.scale(loss or outputs) earlier in the iteration. Call "
                             "scaler.scale(loss).backward() before unscale_, step and update");
}

torch::Tensor GradScaler::scale(const torch::Tensor& outputs) {
  if (!options_.enabled) return outputs;
  if (!scale_.defined()) place_scale(outputs.device());
  return outputs * scale_.to(torch::TensorOptions().device(outputs.device()), /*non_blocking=*/true);
}

std::vector<torch::Tensor> GradScaler::params_of(torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> params;
  for (auto& group : optimizer.param_groups()) {
    for (auto& param : group.params()) params.push_back(param);
  }
  return params;
}

void GradScaler::unscale_(torch::optim::Optimizer& optimizer) { unscale_(&optimizer, params_of(optimizer)); }

bool GradScaler::step(torch::optim::Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  const bool may_step = should_step(&optimizer, params_of(optimizer));
  if (may_step) optimizer.step();
  stepped(&optimizer);
  return may_step;
}

void GradScaler::unscale_(OptimizerKey key, const std::vector<torch::Tensor>& params) {
  if (!options_.enabled) return;
  require_scale("unscale_");
  const auto it = per_optimizer_.find(key);
  if (it != per_optimizer_.end() && it->second.stage == Stage::Unscaled) {
    C10_THROW_ERROR(Error, "unscale_() has already been called on this optimizer since the last update(): "
                           "call it once per step, before step()");
  }
  if (it != per_optimizer_.end() && it->second.stage == Stage::Stepped) {
    C10_THROW_ERROR(Error, "unscale_() is being called after step(): call unscale_(optimizer) before "
                           "step(optimizer), or leave it to step()");
  }
  // The reciprocal in double, rounded to fp32, as PyTorch computes it.
  check_and_unscale(key, params, scale_.to(torch::kDouble).reciprocal().to(torch::kFloat), /*allow_fp16=*/false);
  per_optimizer_[key].stage = Stage::Unscaled;
}

void GradScaler::check_inf(OptimizerKey key, const std::vector<torch::Tensor>& params) {
  if (!options_.enabled) return;
  require_scale("_check_inf_per_device");
  check_and_unscale(key, params, torch::ones({}, scale_.options()), /*allow_fp16=*/true);
}

void GradScaler::check_and_unscale(OptimizerKey key, const std::vector<torch::Tensor>& params,
                                   const torch::Tensor& inv_scale, bool allow_fp16) {
  torch::NoGradGuard no_grad;
  // ATen's fused unscale-and-check over the gradients of each device and
  // dtype; one found_inf per device, shared by its dtypes.
  std::map<std::pair<int, int>, std::map<int, std::vector<torch::Tensor>>> groups;  // device type, index
  for (const auto& param : params) {
    torch::Tensor grad = param.grad();
    if (!grad.defined()) continue;
    if (!allow_fp16 && grad.scalar_type() == torch::kHalf) {
      C10_THROW_ERROR(ValueError, "Attempting to unscale FP16 gradients: the optimizer's parameters are float16. "
                                  "Keep the parameters in float32 and let autocast run the layers in float16, "
                                  "or step fp32 master copies (paisoar::amp::MasterWeights)");
    }
    if (grad.is_sparse()) {
      // PyTorch coalesces only fp16 (whose duplicates may overflow when summed);
      // the values of other sparse gradients are checked as they are.
      if (grad.scalar_type() == torch::kHalf) {
        grad = grad.coalesce();
        const_cast<torch::Tensor&>(param).mutable_grad() = grad;
      }
      grad = grad._values();
    }
    groups[{static_cast<int>(grad.device().type()), grad.device().index()}][static_cast<int>(grad.scalar_type())]
        .push_back(grad);
  }
  std::vector<torch::Tensor> found_inf_per_device;
  for (auto& [where, per_dtype] : groups) {
    const c10::Device device = per_dtype.begin()->second.front().device();
    torch::Tensor found = torch::zeros({}, torch::TensorOptions().device(device).dtype(torch::kFloat));
    const torch::Tensor inv = inv_scale.to(torch::TensorOptions().device(device), /*non_blocking=*/true);
    for (auto& [dtype, grads] : per_dtype) at::_amp_foreach_non_finite_check_and_unscale_(grads, found, inv);
    found_inf_per_device.push_back(found);
  }
  if (verdict_group_) {
    // Every rank must reach the same verdict or their parameters diverge; a
    // rank without gradients takes part too, so no peer waits on it.
    bool local = false;
    for (const auto& found : found_inf_per_device) local = local || found.item<float>() != 0;
    if (comm::any_rank(verdict_group_, local) && !local) {
      for (auto& found : found_inf_per_device) found.fill_(1.0);
    }
  }
  per_optimizer_[key].found_inf_per_device = std::move(found_inf_per_device);
}

void GradScaler::begin_step(OptimizerKey key) const {
  require_scale("step");
  const auto it = per_optimizer_.find(key);
  if (it != per_optimizer_.end() && it->second.stage == Stage::Stepped) {
    C10_THROW_ERROR(Error, "step() has already been called since the last update(): call "
                           "scaler.update() once per iteration, after each optimizer's step");
  }
}

bool GradScaler::should_step(OptimizerKey key, const std::vector<torch::Tensor>& params) {
  if (!options_.enabled) return true;
  begin_step(key);
  if (!unscaled(key)) unscale_(key, params);
  const std::vector<torch::Tensor>& found = per_optimizer_[key].found_inf_per_device;
  if (found.empty()) {
    throw GradScalerStateError("No inf checks were recorded for this optimizer: none of its " +
                               std::to_string(params.size()) +
                               " parameters has a gradient. Call scaler.scale(loss).backward() before "
                               "scaler.step(optimizer)");
  }
  bool any = false;
  for (const auto& f : found) any = any || f.item<float>() != 0;
  return !any;
}

void GradScaler::stepped(OptimizerKey key) {
  if (options_.enabled) per_optimizer_[key].stage = Stage::Stepped;
}

bool GradScaler::unscaled(OptimizerKey key) const {
  const auto it = per_optimizer_.find(key);
  return it != per_optimizer_.end() && it->second.stage == Stage::Unscaled;
}

std::vector<torch::Tensor> GradScaler::found_inf_per_device(OptimizerKey key) const {
  const auto it = per_optimizer_.find(key);
  return it == per_optimizer_.end() ? std::vector<torch::Tensor>{} : it->second.found_inf_per_device;
}

torch::Tensor GradScaler::found_inf(OptimizerKey key) const {
  require_scale("step");
  torch::Tensor sum = torch::zeros({}, scale_.options());
  for (const auto& found : found_inf_per_device(key)) sum = sum + found.to(torch::TensorOptions().device(scale_.device()), true);
  return sum;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  require_scale("update");
  torch::Tensor found_inf;
  for (const auto& [key, state] : per_optimizer_) {
    for (const auto& found : state.found_inf_per_device) {
      torch::Tensor here = found.to(torch::TensorOptions().device(scale_.device()), /*non_blocking=*/true);
      found_inf = found_inf.defined() ? found_inf + here : here;
    }
  }
  if (!found_inf.defined()) {
    throw GradScalerStateError("No inf checks were recorded prior to update: call scaler.step(optimizer) "
                               "(after scaler.scale(loss).backward()) before scaler.update()");
  }
  per_optimizer_.clear();
  skipped_steps_.add_(found_inf.gt(0));
  if (!options_.dynamic) return;
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf, options_.growth_factor, options_.backoff_factor,
                         options_.growth_interval);
  check_min_scale();
}

void GradScaler::check_min_scale() {
  if (!(options_.min_scale > 0)) return;
  const double now = get_scale();
  if (now >= options_.min_scale) return;
  std::string message =
      "GradScaler: the loss scale fell to " + std::to_string(now) + ", below min_scale " +
      std::to_string(options_.min_scale) + ", after " + std::to_string(skipped_steps()) +
      " skipped steps: gradients overflow at every scale, so training is unstable. Lower the "
      "learning rate, look for bad values in the data, or train in bf16 (no scaling needed)";
  if (options_.stop_below_min_scale) C10_THROW_ERROR(Error, message);
  if (!warned_min_scale_) std::cerr << "warning: " << message << std::endl;
  warned_min_scale_ = true;
}

void GradScaler::update(double new_scale) {
  if (!options_.enabled) return;
  require_scale("update");
  TORCH_CHECK_VALUE(std::isfinite(new_scale) && new_scale > 0, "GradScaler::update(new_scale): ", new_scale,
                    " is not a scale; pass a positive finite number");
  scale_.fill_(new_scale);
  per_optimizer_.clear();
}

void GradScaler::update(const torch::Tensor& new_scale) {
  if (!options_.enabled) return;
  require_scale("update");
  TORCH_CHECK_VALUE(new_scale.defined() && new_scale.numel() == 1,
                    "GradScaler::update(new_scale): pass a float or a one-element tensor, got a tensor of ",
                    new_scale.defined() ? new_scale.numel() : 0, " elements");
  const double value = new_scale.item<double>();
  TORCH_CHECK_VALUE(std::isfinite(value) && value > 0, "GradScaler::update(new_scale): ", value,
                    " is not a scale; pass a positive finite number");
  scale_.copy_(new_scale.detach().reshape({}));
  per_optimizer_.clear();
}

double GradScaler::get_scale() const {
  if (!options_.enabled) return 1.0;
  return scale_.defined() ? scale_.item<double>() : init_scale_;
}

int64_t GradScaler::growth_tracker() const {
  if (!options_.enabled) return 0;
  return growth_tracker_.defined() ? growth_tracker_.item<int64_t>() : init_growth_tracker_;
}

int64_t GradScaler::skipped_steps() const {
  return skipped_steps_.defined() ? skipped_steps_.item<int64_t>() : init_skipped_steps_;
}

void GradScaler::set_growth_factor(double factor) {
  if (options_.enabled) check_factors(factor, options_.backoff_factor, options_.growth_interval);
  options_.growth_factor = factor;
}

void GradScaler::set_backoff_factor(double factor) {
  if (options_.enabled) check_factors(options_.growth_factor, factor, options_.growth_interval);
  options_.backoff_factor = factor;
}

void GradScaler::set_growth_interval(int64_t interval) {
  if (options_.enabled) check_factors(options_.growth_factor, options_.backoff_factor, interval);
  options_.growth_interval = interval;
}

std::map<std::string, torch::Tensor> GradScaler::state_dict() const {
  auto f64 = [](double v) { return torch::tensor(v, torch::kDouble); };
  auto i64 = [](int64_t v) { return torch::tensor(v, torch::kLong); };
  return {{"scale", f64(get_scale())},
          {"growth_factor", f64(options_.growth_factor)},
          {"backoff_factor", f64(options_.backoff_factor)},
          {"growth_interval", i64(options_.growth_interval)},
          {"_growth_tracker", i64(growth_tracker())},
          {"skipped_steps", i64(skipped_steps())}};
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
  const double growth_factor = *number("growth_factor", true);
  const double backoff_factor = *number("backoff_factor", true);
  const auto growth_interval = static_cast<int64_t>(*number("growth_interval", true));
  const auto tracker = static_cast<int64_t>(*number("_growth_tracker", true));
  const auto skipped = static_cast<int64_t>(number("skipped_steps", false).value_or(skipped_steps()));
  check_positive("scale", loaded_scale);
  check_factors(growth_factor, backoff_factor, growth_interval);  // before anything changes
  options_.growth_factor = growth_factor;
  options_.backoff_factor = backoff_factor;
  options_.growth_interval = growth_interval;
  // As PyTorch: the numbers become the initial ones and, once placed, the
  // tensors' (the scale rounded to float32 there).
  init_scale_ = loaded_scale;
  init_growth_tracker_ = tracker;
  init_skipped_steps_ = skipped;
  if (scale_.defined()) {
    scale_.fill_(loaded_scale);
    growth_tracker_.fill_(tracker);
    skipped_steps_.fill_(skipped);
  }
}

}  // namespace paisoar::amp
