// LR schedules for any torch::optim optimizer: linear warmup, then constant,
// cosine, step or polynomial decay, as a pure function of the step (so resuming
// is setting the step), plus the linear scaling rule for large batches.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace paisoar::optim {

enum class LrDecay { Constant, Cosine, Step, Polynomial };

// Steps are optimizer steps counted from 0 (the first step is step 0).
// The schedule is a factor f(step) that multiplies each param group's base lr.
struct LrScheduleOptions {
  // Linear warmup: f rises from warmup_start_factor at step 0 to 1 at step
  // warmup_steps. 0: no warmup. With the default start 0 the first step has lr 0.
  int64_t warmup_steps = 0;
  double warmup_start_factor = 0.0;  // in [0, 1]

  // What follows the warmup.
  LrDecay decay = LrDecay::Constant;
  // Cosine, Polynomial: the step at which the decay ends, counted from 0 with
  // the warmup included (the length of training); from then on f = final_factor.
  // Required (> 0, >= warmup_steps) for these two, ignored by the others.
  int64_t total_steps = 0;
  // Cosine, Polynomial: f at total_steps, as a fraction of each group's base lr
  // (other libraries' min_lr / end_lr, divided by the base lr). In [0, 1].
  double final_factor = 0.0;
  // Polynomial: f = final + (1 - final) * (1 - progress)^power. 1: linear decay.
  double power = 1.0;
  // Step: f is multiplied by gamma every step_size steps after the warmup (at
  // warmup_steps + step_size, + 2*step_size, ...), or at each of `milestones`
  // (absolute steps, increasing, each >= warmup_steps). Give exactly one.
  double gamma = 0.1;
  int64_t step_size = 0;
  std::vector<int64_t> milestones;
};

// `options` if valid; throws c10::Error naming an invalid option and what to set instead.
LrScheduleOptions checked_schedule(LrScheduleOptions options);
// f(step) of valid (checked) options; step >= 0. LrSchedule and Python's
// paisoar.optim.WarmupDecay both use it.
double schedule_factor(const LrScheduleOptions& options, int64_t step);

// Sets the lr of every param group of an optimizer to base_lr[group] * f(step),
// where base_lr[group] is the group's lr when the schedule was constructed (as
// PyTorch's LambdaLR does). Construction applies step 0; then call step() after
// each optimizer.step():
//   LrSchedule schedule(optimizer, options);
//   for (...) { ...; optimizer.step(); schedule.step(); }
// Resume: build the optimizer with its base lrs, then the schedule, then
// load_state_dict() or set_step(global_step). The saved state also carries the
// base lrs, so load_state_dict() is right even when the optimizer's restored
// lr is the scheduled one (as after PyTorch's load_state_dict; LibTorch's
// torch::load of an optimizer leaves the constructor's lr).
// The optimizer must outlive the schedule; its options must implement set_lr
// (every torch::optim and paisoar optimizer does). Add all param groups first.
// Thread safety: none; a schedule belongs to one training thread.
class LrSchedule {
 public:
  // Throws c10::Error naming an invalid option and what to set instead.
  LrSchedule(torch::optim::Optimizer& optimizer, LrScheduleOptions options);

  // f(step): pure, the same for every group. step >= 0.
  double factor_at(int64_t step) const;
  // base_lr[group] * f(step).
  double lr_at(int64_t step, size_t group = 0) const;

  // Advances to the next step and sets its lrs.
  void step();
  // Jumps to `step` and sets its lrs (e.g. the global step when resuming).
  void set_step(int64_t step);
  // The step whose lrs are set (0 after construction).
  int64_t last_step() const { return step_; }
  // The lr set on each group (PyTorch's name).
  std::vector<double> get_last_lr() const;
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  const LrScheduleOptions& options() const { return options_; }

  // {"last_step": 0-dim int64, "base_lrs": 1-D float64, one per group}.
  std::map<std::string, torch::Tensor> state_dict() const;
  // Restores the step and base lrs and sets the lrs. Throws c10::Error naming a
  // missing key or a base_lrs count that differs from the optimizer's groups.
  void load_state_dict(const std::map<std::string, torch::Tensor>& state);

 private:
  void apply();

  torch::optim::Optimizer& optimizer_;  // not owned
  LrScheduleOptions options_;
  std::vector<double> base_lrs_;
  int64_t step_ = 0;
};

// The linear scaling rule (Goyal et al. 2017): a recipe tuned with base_lr at
// base_batch samples per step uses base_lr * global_batch / base_batch at
// global_batch (all ranks, all micro-batches). Pair it with a warmup.
// All inputs must be positive; throws c10::Error otherwise.
double scaled_lr(double base_lr, int64_t global_batch, int64_t base_batch);

}  // namespace paisoar::optim
