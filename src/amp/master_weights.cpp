// amp::MasterWeights: fp32 copies of low-precision parameters and the two copies
// per step between them.
#include "paisoar/amp/master_weights.h"

#include <c10/util/Exception.h>

#include <torch/torch.h>

#include <stdexcept>

namespace paisoar::amp {

MasterWeights::MasterWeights(std::vector<torch::Tensor> model_params)
    : model_(std::move(model_params)) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < model_.size(); ++i) {
    const auto& p = model_[i];
    if (!p.is_floating_point()) {
      C10_THROW_ERROR(ValueError, "MasterWeights: parameter " + std::to_string(i) + " is " +
                                  c10::toString(p.scalar_type()) +
                                  ", not a floating type; pass only the trainable parameters");
    }
    master_.push_back(p.scalar_type() == torch::kFloat
                          ? p
                          : p.detach().to(torch::kFloat).requires_grad_(p.requires_grad()));
  }
}

void MasterWeights::copy_grads_to_master() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < model_.size(); ++i) {
    if (master_[i].is_same(model_[i])) continue;  // fp32 parameter: shared
    const auto& g = model_[i].grad();
    if (!g.defined()) {
      master_[i].mutable_grad() = torch::Tensor();
      continue;
    }
    if (master_[i].grad().defined()) master_[i].mutable_grad().copy_(g);
    else master_[i].mutable_grad() = g.to(torch::kFloat);
  }
}

void MasterWeights::copy_master_to_model() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < model_.size(); ++i) {
    if (!master_[i].is_same(model_[i])) model_[i].copy_(master_[i]);
  }
}

}  // namespace paisoar::amp
