// LrSchedule: the warmup and decay formulas, option checks, and setting the
// lrs of an optimizer's param groups; scaled_lr (the linear scaling rule).
#include "paisoar/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace paisoar::optim {
namespace {

constexpr double kPi = 3.14159265358979323846;

const char* to_string(LrDecay decay) {
  switch (decay) {
    case LrDecay::Constant: return "constant";
    case LrDecay::Cosine: return "cosine";
    case LrDecay::Step: return "step";
    case LrDecay::Polynomial: return "polynomial";
  }
  return "unknown";
}

void check_fraction(const char* name, double value) {
  TORCH_CHECK_VALUE(value >= 0 && value <= 1, "LrSchedule: ", name, " must be in [0, 1], got ", value);
}

}  // namespace

LrScheduleOptions checked_schedule(LrScheduleOptions o) {
  TORCH_CHECK_VALUE(o.warmup_steps >= 0, "LrSchedule: warmup_steps must be >= 0 (0: no warmup), got ",
              o.warmup_steps);
  check_fraction("warmup_start_factor", o.warmup_start_factor);
  switch (o.decay) {
    case LrDecay::Constant:
      break;
    case LrDecay::Cosine:
    case LrDecay::Polynomial:
      TORCH_CHECK_VALUE(o.total_steps > 0, "LrSchedule: ", to_string(o.decay),
                  " decay needs total_steps > 0 (the number of training steps, warmup included), got ",
                  o.total_steps);
      TORCH_CHECK_VALUE(o.warmup_steps <= o.total_steps, "LrSchedule: warmup_steps (", o.warmup_steps,
                  ") exceeds total_steps (", o.total_steps, "); shorten the warmup or set total_steps ",
                  "to the length of training, warmup included");
      check_fraction("final_factor", o.final_factor);
      TORCH_CHECK_VALUE(o.power > 0 && std::isfinite(o.power), "LrSchedule: power must be > 0, got ",
                  o.power);
      break;
    case LrDecay::Step:
      TORCH_CHECK_VALUE(o.gamma > 0 && std::isfinite(o.gamma), "LrSchedule: gamma must be > 0, got ",
                  o.gamma);
      TORCH_CHECK_VALUE(o.step_size >= 0, "LrSchedule: step_size must be >= 0, got ", o.step_size);
      TORCH_CHECK_VALUE((o.step_size > 0) != !o.milestones.empty(),
                  "LrSchedule: step decay needs exactly one of step_size > 0 (decay every step_size "
                  "steps) or milestones (decay at those steps); got step_size ", o.step_size,
                  " and ", o.milestones.size(), " milestones");
      for (size_t i = 0; i < o.milestones.size(); ++i) {
        TORCH_CHECK_VALUE(o.milestones[i] >= o.warmup_steps, "LrSchedule: milestones[", i, "] (",
                    o.milestones[i], ") falls inside the warmup (warmup_steps ", o.warmup_steps,
                    "); milestones are absolute steps and must be >= warmup_steps");
        TORCH_CHECK_VALUE(i == 0 || o.milestones[i] > o.milestones[i - 1], "LrSchedule: milestones must ",
                    "be strictly increasing, got ", o.milestones[i - 1], " then ", o.milestones[i]);
      }
      break;
    default:
      TORCH_CHECK_VALUE(false, "LrSchedule: unknown decay ", static_cast<int>(o.decay));
  }
  return o;
}

namespace {

// Decay after the warmup; `step` >= warmup_steps.
double decay_factor(const LrScheduleOptions& o, int64_t step) {
  switch (o.decay) {
    case LrDecay::Constant:
      return 1.0;
    case LrDecay::Cosine:
    case LrDecay::Polynomial: {
      // step < total_steps here implies total_steps > warmup_steps: no 0/0.
      if (step >= o.total_steps) return o.final_factor;
      const double progress = static_cast<double>(step - o.warmup_steps) /
                              static_cast<double>(o.total_steps - o.warmup_steps);
      const double shape = o.decay == LrDecay::Cosine ? 0.5 * (1.0 + std::cos(kPi * progress))
                                                      : std::pow(1.0 - progress, o.power);
      return o.final_factor + (1.0 - o.final_factor) * shape;
    }
    case LrDecay::Step: {
      int64_t decays = 0;
      if (o.step_size > 0) {
        decays = (step - o.warmup_steps) / o.step_size;
      } else {
        decays = std::upper_bound(o.milestones.begin(), o.milestones.end(), step) -
                 o.milestones.begin();
      }
      return std::pow(o.gamma, static_cast<double>(decays));
    }
  }
  return 1.0;
}

}  // namespace

double schedule_factor(const LrScheduleOptions& o, int64_t step) {
  TORCH_CHECK(step >= 0, "LrSchedule: step must be >= 0, got ", step);
  if (step < o.warmup_steps) {
    const double ramp = static_cast<double>(step) / static_cast<double>(o.warmup_steps);
    return o.warmup_start_factor + (1.0 - o.warmup_start_factor) * ramp;
  }
  return decay_factor(o, step);
}

LrSchedule::LrSchedule(torch::optim::Optimizer& optimizer, LrScheduleOptions options)
    : optimizer_(optimizer), options_(checked_schedule(std::move(options))) {
  for (auto& group : optimizer_.param_groups()) base_lrs_.push_back(group.options().get_lr());
  apply();
}

double LrSchedule::factor_at(int64_t step) const { return schedule_factor(options_, step); }

double LrSchedule::lr_at(int64_t step, size_t group) const {
  TORCH_CHECK(group < base_lrs_.size(), "LrSchedule: group ", group, " out of range; the optimizer had ",
              base_lrs_.size(), " param groups when the schedule was made");
  return base_lrs_[group] * factor_at(step);
}

void LrSchedule::step() { set_step(step_ + 1); }

void LrSchedule::set_step(int64_t step) {
  TORCH_CHECK(step >= 0, "LrSchedule: step must be >= 0, got ", step);
  step_ = step;
  apply();
}

void LrSchedule::apply() {
  auto& groups = optimizer_.param_groups();
  TORCH_CHECK(groups.size() == base_lrs_.size(), "LrSchedule: the optimizer has ", groups.size(),
              " param groups but had ", base_lrs_.size(), " when the schedule was made; make the ",
              "schedule after adding every param group");
  const double factor = factor_at(step_);
  for (size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(base_lrs_[i] * factor);
}

std::vector<double> LrSchedule::get_last_lr() const {
  std::vector<double> lrs;
  for (const auto& group : optimizer_.param_groups()) lrs.push_back(group.options().get_lr());
  return lrs;
}

std::map<std::string, torch::Tensor> LrSchedule::state_dict() const {
  return {{"last_step", torch::tensor(step_, torch::kLong)},
          {"base_lrs", torch::tensor(base_lrs_, torch::kDouble)}};
}

void LrSchedule::load_state_dict(const std::map<std::string, torch::Tensor>& state) {
  auto get = [&](const char* key) -> const torch::Tensor& {
    auto it = state.find(key);
    TORCH_CHECK(it != state.end() && it->second.defined(), "LrSchedule::load_state_dict: key '", key,
                "' is missing; was this state saved by LrSchedule::state_dict()?");
    return it->second;
  };
  const torch::Tensor& step = get("last_step");
  TORCH_CHECK(step.numel() == 1, "LrSchedule::load_state_dict: 'last_step' must hold one number, got ",
              "a tensor of shape ", step.sizes());
  const torch::Tensor base = get("base_lrs").to(torch::kDouble).contiguous().view(-1);
  const size_t groups = optimizer_.param_groups().size();
  TORCH_CHECK(static_cast<size_t>(base.numel()) == groups, "LrSchedule::load_state_dict: the state has ",
              base.numel(), " base lrs but the optimizer has ", groups, " param groups; build the ",
              "optimizer with the same param groups as the run that saved it");
  const int64_t loaded_step = step.item<int64_t>();
  TORCH_CHECK(loaded_step >= 0, "LrSchedule::load_state_dict: 'last_step' must be >= 0, got ",
              loaded_step);
  base_lrs_.assign(base.data_ptr<double>(), base.data_ptr<double>() + base.numel());
  set_step(loaded_step);
}

double scaled_lr(double base_lr, int64_t global_batch, int64_t base_batch) {
  TORCH_CHECK(base_lr > 0 && std::isfinite(base_lr), "scaled_lr: base_lr must be > 0, got ", base_lr);
  TORCH_CHECK(global_batch > 0, "scaled_lr: global_batch (samples per optimizer step over all ranks) ",
              "must be > 0, got ", global_batch);
  TORCH_CHECK(base_batch > 0, "scaled_lr: base_batch (the batch size base_lr was tuned for) must be ",
              "> 0, got ", base_batch);
  return base_lr * static_cast<double>(global_batch) / static_cast<double>(base_batch);
}

}  // namespace paisoar::optim
