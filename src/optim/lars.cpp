// LARS: the step, and (de)serialization in torch::optim's archive format.
#include "paisoar/optim/lars.h"

#include <torch/optim/serialize.h>

#include "src/optim/checked_load.h"
#include "src/optim/layerwise.h"
#include "src/util/torch_api.h"

namespace paisoar::optim {

void LARSOptions::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(lr);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(weight_decay);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eta);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(eps);
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(exclude_1d);
}

void LARSOptions::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, lr);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, momentum);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, weight_decay);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eta);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(double, eps);
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(bool, exclude_1d);
}

void LARSParamState::serialize(torch::serialize::OutputArchive& archive) const {
  _TORCH_OPTIM_SERIALIZE_TORCH_ARG(momentum_buffer);
}

void LARSParamState::serialize(torch::serialize::InputArchive& archive) {
  _TORCH_OPTIM_DESERIALIZE_TORCH_ARG(torch::Tensor, momentum_buffer);
}

namespace {

LARSOptions checked(LARSOptions o) {
  TORCH_CHECK(o.lr() >= 0, "LARS: lr must be >= 0, got ", o.lr());
  TORCH_CHECK(o.momentum() >= 0, "LARS: momentum must be >= 0, got ", o.momentum());
  TORCH_CHECK(o.weight_decay() >= 0, "LARS: weight_decay must be >= 0, got ", o.weight_decay());
  TORCH_CHECK(o.eta() > 0, "LARS: eta (trust coefficient) must be > 0, got ", o.eta());
  return o;
}

}  // namespace

LARS::LARS(std::vector<torch::optim::OptimizerParamGroup> groups, LARSOptions defaults)
    : Optimizer(std::move(groups), std::make_unique<LARSOptions>(checked(defaults))) {}

LARS::LARS(std::vector<torch::Tensor> params, LARSOptions defaults)
    : LARS({torch::optim::OptimizerParamGroup(std::move(params))}, defaults) {}

torch::Tensor LARS::step(LossClosure closure) {
  torch::Tensor loss = detail::evaluate_closure(closure);
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const LARSOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "LARS does not support sparse gradients");
      torch::Tensor g = p.grad();
      torch::Tensor scaled_lr;  // lr * trust, as a 0-dim tensor
      if (detail::exempt(p, o.exclude_1d())) {
        scaled_lr = torch::full({}, o.lr(), p.options());
      } else {
        auto w_norm = p.norm();
        auto g_norm = g.norm();
        if (o.weight_decay() != 0) g = g.add(p, o.weight_decay());
        auto trust = detail::trust_ratio(o.eta() * w_norm,
                                         g_norm + o.weight_decay() * w_norm + o.eps());
        trust = torch::where(g_norm.gt(0), trust, torch::ones_like(trust));
        scaled_lr = trust * o.lr();
      }
      auto key = paisoar::detail::optim_state_key(p);
      if (!state_.count(key)) {
        auto s = std::make_unique<LARSParamState>();
        s->momentum_buffer(torch::zeros_like(p));
        state_[key] = std::move(s);
      }
      auto& buf = static_cast<LARSParamState&>(*state_[key]).momentum_buffer();
      buf.mul_(o.momentum()).add_(g * scaled_lr);
      p.sub_(buf);
    }
  }
  return loss;
}

void LARS::save(torch::serialize::OutputArchive& archive) const {
  torch::optim::serialize<LARSParamState, LARSOptions>(archive, *this);
}

void LARS::load(torch::serialize::InputArchive& archive) {
  detail::load_checked<LARSParamState, LARSOptions>(*this, archive, "LARS", [](const LARSParamState& s) {
    return std::vector<std::pair<const char*, torch::Tensor>>{{"momentum_buffer", s.momentum_buffer()}};
  });
}

}  // namespace paisoar::optim
