// FlatBuffer: packing parameters and gradients into aliases of two flat tensors.
#include "paisoar/optim/flat_buffer.h"

#include <c10/util/Exception.h>

#include "src/util/storage_alias.h"

#include <torch/torch.h>

#include <stdexcept>

namespace paisoar::optim {

FlatBuffer::FlatBuffer(std::vector<torch::Tensor> params) : params_(std::move(params)) {
  if (params_.empty()) C10_THROW_ERROR(ValueError, "FlatBuffer: no parameters given");
  const auto options = params_[0].options();
  int64_t total = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& p = params_[i];
    if (p.scalar_type() != params_[0].scalar_type() || p.device() != params_[0].device()) {
      C10_THROW_ERROR(ValueError, 
          "FlatBuffer: parameter " + std::to_string(i) + " is " + c10::toString(p.scalar_type()) +
          " on " + p.device().str() + " but parameter 0 is " +
          c10::toString(params_[0].scalar_type()) + " on " + params_[0].device().str() +
          "; make one flat optimizer per dtype and device");
    }
    offsets_.push_back(total);
    numels_.push_back(p.numel());
    total += p.numel();
  }
  data_ = torch::empty({total}, options);
  grad_ = torch::zeros({total}, options);
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    slice(data_, i).copy_(p.reshape({-1}));
    if (p.grad().defined()) slice(grad_, i).copy_(p.grad().reshape({-1}));
    p.set_data(alias(data_, i));
    p.mutable_grad() = alias(grad_, i);
  }
}

torch::Tensor FlatBuffer::slice(const torch::Tensor& flat, size_t i) const {
  return flat.narrow(0, offsets_[i], numels_[i]);
}

torch::Tensor FlatBuffer::alias(const torch::Tensor& flat, size_t i) const {
  return detail::storage_alias(flat, offsets_[i], params_[i].sizes());
}

void FlatBuffer::adopt_gradients() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    const torch::Tensor& g = p.grad();
    if (detail::starts_at(g, grad_, offsets_[i])) continue;
    if (g.defined()) slice(grad_, i).copy_(g.reshape({-1}));
    else slice(grad_, i).zero_();
    p.mutable_grad() = alias(grad_, i);
  }
}

}  // namespace paisoar::optim
