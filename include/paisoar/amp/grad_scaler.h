// amp::GradScaler: dynamic loss scaling with PyTorch's names and numbers
// (torch.amp.GradScaler's scale, unscale_, step, update, get_scale, state_dict,
// load_state_dict), so that small fp16 gradients do not underflow and
// overflowing steps are skipped.
#pragma once

#include <c10/core/Device.h>
#include <c10/util/Exception.h>
#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include <map>
#include <memory>
#include <optional>
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
  // Where the scale lives. Unset (PyTorch's rule): on the device of the first
  // output given to scale(). Set it on a rank that steps gradients without
  // scaling a loss itself (a pipeline stage other than the last).
  std::optional<c10::Device> device;
  // paisoar's floor, off (0) by default as PyTorch has none: a dynamic scale
  // pushed below it means gradients overflow at any scale, and update() throws
  // (stop_below_min_scale) or warns once instead of skipping forever.
  double min_scale = 0.0;
  bool stop_below_min_scale = true;
};

// A call the scaler's protocol does not allow at this point: unscale_, step or
// update before any scale(), step or update with no inf/NaN check recorded.
// PyTorch asserts these, so Python sees an AssertionError.
class GradScalerStateError : public c10::Error {
 public:
  explicit GradScalerStateError(std::string message) : c10::Error(std::move(message)) {}
};

// Use, per iteration (with gradient accumulation, scale() every micro-step and
// call unscale_/step/update only on the real step):
//   scaler.scale(loss).backward();
//   scaler.unscale_(opt);            // optional, e.g. before gradient clipping
//   scaler.step(opt);                // skipped if any gradient is inf/NaN
//   scaler.update();
// The numbers are PyTorch's: the scale is a 0-dim float32 tensor, gradients
// are unscaled and checked by ATen's _amp_foreach_non_finite_check_and_unscale_
// and the scale moves by ATen's _amp_update_scale_ (growth only to a finite
// float32). `verdict_group` (paisoar's addition, for sharded gradients as
// with ZeRO): every rank of it agrees on each step's inf/NaN verdict (one
// 1-element allreduce per unscale), so no rank steps while another skips;
// without it each rank decides alone, as PyTorch's scaler does.
// Thread safety: one scaler belongs to one training thread.
class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {},
                      std::shared_ptr<comm::Communicator> verdict_group = nullptr);

  // outputs * scale (outputs itself when disabled); the product's dtype follows
  // type promotion with a 0-dim float32 tensor, as in PyTorch (a 0-dim fp16
  // loss gives an fp32 product). The first call places the scale on outputs'
  // device unless options.device did.
  torch::Tensor scale(const torch::Tensor& outputs);
  // Divides the gradients `optimizer` will apply by the scale, once per step,
  // and records whether any is inf/NaN. Throws c10::Error if called twice or
  // after step(), c10::ValueError for float16 gradients.
  void unscale_(torch::optim::Optimizer& optimizer);
  // unscale_ (if not done), then optimizer.step() unless a gradient was inf/NaN.
  // Returns true when the optimizer stepped.
  bool step(torch::optim::Optimizer& optimizer);
  // Moves the scale by this step's verdict and readies the next step.
  void update();
  // Readies the next step with the scale set to `new_scale` instead (PyTorch's
  // update(new_scale)); the growth tracker is kept. Throws c10::ValueError
  // unless new_scale is positive and finite (a one-element tensor for the second).
  void update(double new_scale);
  void update(const torch::Tensor& new_scale);

  // The same protocol for optimizers that are not torch::optim ones (Python's):
  // `key` identifies the optimizer until update(), `params` are its parameters.
  using OptimizerKey = const void*;
  void unscale_(OptimizerKey key, const std::vector<torch::Tensor>& params);
  // step()'s checks for `key` (a scale is placed, no step yet since update()).
  void begin_step(OptimizerKey key) const;
  // begin_step, unscale_ if not done, and whether the caller may step the
  // optimizer (false: a gradient was inf/NaN, on some rank of the verdict
  // group). Call stepped(key) once it has stepped or skipped.
  bool should_step(OptimizerKey key, const std::vector<torch::Tensor>& params);
  void stepped(OptimizerKey key);
  // For optimizers that unscale themselves (PyTorch's _step_supports_amp_scaling,
  // e.g. fused Adam): checks the gradients for inf/NaN without unscaling them
  // and records the result (PyTorch's _check_inf_per_device).
  void check_inf(OptimizerKey key, const std::vector<torch::Tensor>& params);
  // Whether unscale_(key) ran since the last update().
  bool unscaled(OptimizerKey key) const;
  // The recorded verdicts, one 0-dim float32 tensor per device of key's
  // gradients (1 where inf/NaN was found), and their sum on the scale's device.
  std::vector<torch::Tensor> found_inf_per_device(OptimizerKey key) const;
  torch::Tensor found_inf(OptimizerKey key) const;
  // Whether any optimizer was unscaled or stepped since the last update().
  bool mid_iteration() const { return !per_optimizer_.empty(); }

  // The 0-dim float32 scale; undefined until placed.
  const torch::Tensor& scale_tensor() const { return scale_; }
  // The scale as a double (its float32 value once placed; 1.0 when disabled).
  double get_scale() const;
  int64_t growth_tracker() const;
  int64_t skipped_steps() const;
  bool is_enabled() const { return options_.enabled; }
  const GradScalerOptions& options() const { return options_; }
  // PyTorch's setters: used from the next update(). Throw c10::ValueError
  // for a factor or interval the constructor would refuse.
  void set_growth_factor(double factor);
  void set_backoff_factor(double factor);
  void set_growth_interval(int64_t interval);

  // 0-dim tensors: scale, growth_factor, backoff_factor, growth_interval,
  // _growth_tracker (PyTorch's keys), skipped_steps.
  std::map<std::string, torch::Tensor> state_dict() const;
  // Throws c10::ValueError naming a missing key or a bad value; a failed load
  // changes nothing. skipped_steps is optional.
  void load_state_dict(const std::map<std::string, torch::Tensor>& state);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    Stage stage = Stage::Ready;
    std::vector<torch::Tensor> found_inf_per_device;  // empty: no gradient checked
  };
  static std::vector<torch::Tensor> params_of(torch::optim::Optimizer& optimizer);
  void place_scale(c10::Device device);
  void require_scale(const char* call) const;
  // Unscales (multiplies by inv_scale) and checks key's gradients, and records
  // the verdict per device, agreed across the verdict group.
  void check_and_unscale(OptimizerKey key, const std::vector<torch::Tensor>& params,
                         const torch::Tensor& inv_scale, bool allow_fp16);
  void check_min_scale();

  GradScalerOptions options_;
  std::shared_ptr<comm::Communicator> verdict_group_;
  // Before the scale is placed, the state lives in these; once placed, in the
  // tensors below (on the scale's device, read back only when asked for).
  double init_scale_;
  int64_t init_growth_tracker_ = 0;
  int64_t init_skipped_steps_ = 0;
  torch::Tensor scale_;           // 0-dim float32
  torch::Tensor growth_tracker_;  // 0-dim int32, as _amp_update_scale_ takes it
  torch::Tensor skipped_steps_;   // 0-dim int64
  bool warned_min_scale_ = false;
  std::unordered_map<OptimizerKey, PerOptimizer> per_optimizer_;
};

}  // namespace paisoar::amp
