// LAMB: the step, and (de)serialization in torch::optim's archive format.
#include "paisoar/optim/lamb.h"

#include <torch/optim/serialize.h>

#include <cmath>

#include "src/optim/checked_load.h"
#include "src/optim/layerwise.h"
#include "src/util/torch_api.h"

namespace paisoar::optim {

void LAMBOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(betas);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(bias_correction);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exclude_1d);
}

void LAMBOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(betas_t, betas);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, bias_correction);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, exclude_1d);
}

void LAMBParamState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(step);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exp_avg_sq);
}

void LAMBParamState::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(int64_t, step);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, exp_avg_sq);
}

namespace {

LAMBOptions checked(LAMBOptions o) {
  auto [b1, b2] = o.betas();
  TORCH_CHECK(o.lr() >= 0, "LAMB: lr must be >= 0, got ", o.lr());
  TORCH_CHECK(0 <= b1 && b1 < 1 && 0 <= b2 && b2 < 1, "LAMB: betas must be in [0, 1), got (", b1,
              ", ", b2, ")");
  TORCH_CHECK(o.eps() > 0, "LAMB: eps must be > 0, got ", o.eps());
  TORCH_CHECK(o.weight_decay() >= 0, "LAMB: weight_decay must be >= 0, got ", o.weight_decay());
  return o;
}

}  // namespace

LAMB::LAMB(std::vector<torch::optim::OptimizerParamGroup> groups, LAMBOptions defaults)
    : Optimizer(std::move(groups), std::make_unique<LAMBOptions>(checked(defaults))) {}

LAMB::LAMB(std::vector<torch::Tensor> params, LAMBOptions defaults)
    : LAMB({torch::optim::OptimizerParamGroup(std::move(params))}, defaults) {}

torch::Tensor LAMB::step(LossClosure closure) {
  torch::Tensor loss = detail::evaluate_closure(closure);
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const LAMBOptions&>(group.options());
    const auto [beta1, beta2] = o.betas();
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "LAMB does not support sparse gradients");
      const torch::Tensor& g = p.grad();
      auto key = paisoar::detail::optim_state_key(p);
      if (!state_.count(key)) {
        auto s = std::make_unique<LAMBParamState>();
        s->exp_avg(torch::zeros_like(p));
        s->exp_avg_sq(torch::zeros_like(p));
        state_[key] = std::move(s);
      }
      auto& s = static_cast<LAMBParamState&>(*state_[key]);
      s.step(s.step() + 1);
      s.exp_avg().mul_(beta1).add_(g, 1 - beta1);
      s.exp_avg_sq().mul_(beta2).addcmul_(g, g, 1 - beta2);
      const double c1 = o.bias_correction() ? 1 - std::pow(beta1, s.step()) : 1.0;
      const double c2 = o.bias_correction() ? 1 - std::pow(beta2, s.step()) : 1.0;
      auto update = (s.exp_avg() / c1) / ((s.exp_avg_sq() / c2).sqrt() + o.eps());
      if (detail::exempt(p, o.exclude_1d())) {
        p.sub_(update, o.lr());
        continue;
      }
      if (o.weight_decay() != 0) update.add_(p, o.weight_decay());
      auto trust = detail::trust_ratio(p.norm(), update.norm());
      p.sub_(update * (trust * o.lr()));
    }
  }
  return loss;
}

void LAMB::save(torch::serialize::OutputArchive& archive) const {
  torch::optim::serialize<LAMBParamState, LAMBOptions>(archive, *this);
}

void LAMB::load(torch::serialize::InputArchive& archive) {
  detail::load_checked<LAMBParamState, LAMBOptions>(*this, archive, "LAMB", [](const LAMBParamState& s) {
    return std::vector<std::pair<const char*, torch::Tensor>>{{"exp_avg", s.exp_avg()},
                                                              {"exp_avg_sq", s.exp_avg_sq()}};
  });
}

}  // namespace paisoar::optim
