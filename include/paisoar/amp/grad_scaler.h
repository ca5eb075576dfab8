// amp::GradScaler: dynamic loss scaling with PyTorch's names and semantics
// (scale, unscale_, step, update, get_scale, state_dict, load_state_dict), so
// that small fp16/bf16 gradients do not underflow and overflowing steps are skipped.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::amp {

struct GradScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;   // after growth_interval steps without inf/NaN
  double backoff_factor = 0.5;  // on a step with inf/NaN
  int64_t growth_interval = 2000;
  bool enabled = true;  // false: every call is a pass-through
  bool dynamic = true;  // false: a static scale (inf/NaN steps are still skipped)
  // A dynamic scale pushed below this means gradients overflow at any scale:
  // update() throws (stop_below_min_scale) or warns once instead of skipping forever.
  double min_scale = 1.0;
  bool stop_below_min_scale = true;
};

// Use, per iteration (with gradient accumulation, scale() every micro-step and
// call unscale_/step/update only on the real step):
//   scaler.scale(loss).backward();
//   scaler.unscale_(opt);            // optional, e.g. before gradient clipping
//   scaler.step(opt);                // skipped if any gradient is inf/NaN
//   scaler.update();
// In data-parallel training pass the Communicator: the inf/NaN verdict is then
// agreed by all ranks (one small allreduce), so no rank steps when another skips.
// Thread safety: one scaler belongs to one training thread.
class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {},
                      std::shared_ptr<comm::Communicator> comm = nullptr);

  // loss * scale (the loss itself when disabled).
  torch::Tensor scale(const torch::Tensor& loss) const;
  // Divides the gradients `optimizer` will apply by the scale, once per step,
  // and records whether any is inf/NaN. Throws if called twice before update().
  void unscale_(torch::optim::Optimizer& optimizer);
  // unscale_ (if not done), then optimizer.step() unless a gradient was inf/NaN.
  // Returns true when the optimizer stepped.
  bool step(torch::optim::Optimizer& optimizer);
  // Adjusts the scale from this step's verdict and readies the next step.
  void update();
  // Readies the next step with the scale set to `new_scale` instead of the
  // policy's (PyTorch's update(new_scale)); the growth tracker is kept.
  // Throws c10::ValueError unless new_scale is positive and finite.
  void update(double new_scale);

  // The same protocol for optimizers that are not torch::optim ones (Python's):
  // `key` identifies the optimizer until update(), `params` are its parameters.
  using OptimizerKey = const void*;
  void unscale_(OptimizerKey key, const std::vector<torch::Tensor>& params);
  // Unscales (if not done), marks the optimizer stepped, and returns whether
  // the caller may step it (false: a gradient was inf/NaN on some rank).
  bool should_step(OptimizerKey key, const std::vector<torch::Tensor>& params);

  double get_scale() const { return options_.enabled ? scale_ : 1.0; }
  bool is_enabled() const { return options_.enabled; }
  int64_t skipped_steps() const { return skipped_steps_; }
  int64_t growth_tracker() const { return growth_tracker_; }
  const GradScalerOptions& options() const { return options_; }

  // 0-dim tensors: scale, growth_factor, backoff_factor, growth_interval,
  // growth_tracker, skipped_steps (PyTorch's keys plus the skip count).
  std::map<std::string, torch::Tensor> state_dict() const;
  // Throws c10::ValueError naming a missing key or a non-scalar value.
  void load_state_dict(const std::map<std::string, torch::Tensor>& state);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    Stage stage = Stage::Ready;
    bool found_inf = false;
  };
  static std::vector<torch::Tensor> params_of(torch::optim::Optimizer& optimizer);
  // Ends the step for both update()s: whether any optimizer found inf/NaN
  // (counted as a skipped step), with the per-optimizer records cleared.
  bool end_step();

  GradScalerOptions options_;
  std::shared_ptr<comm::Communicator> comm_;
  double scale_;
  int64_t growth_tracker_ = 0;
  int64_t skipped_steps_ = 0;
  bool warned_min_scale_ = false;
  std::unordered_map<OptimizerKey, PerOptimizer> per_optimizer_;
};

}  // namespace paisoar::amp
