// ProbeGuard: for a forward pass that is not training (the memory
// prediction's, the non-finite traces'): keeps the model's buffers (batch
// norm's statistics) and the CPU random generator's state (dropout draws
// from it) and puts both back when it goes, so training goes on as if the
// probe had not run and a resumed run stays the uninterrupted one's.
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <torch/nn/module.h>
#include <torch/types.h>

#include <vector>

namespace paisoar::train {

class ProbeGuard {
 public:
  explicit ProbeGuard(torch::nn::Module& model) : generator_(at::detail::getDefaultCPUGenerator()) {
    torch::NoGradGuard no_grad;
    for (const auto& b : model.buffers()) {
      buffers_.push_back(b);
      kept_.push_back(b.clone());
    }
    rng_state_ = generator_.get_state();
  }
  ~ProbeGuard() {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < buffers_.size(); ++i) buffers_[i].copy_(kept_[i]);
    generator_.set_state(rng_state_);
  }
  ProbeGuard(const ProbeGuard&) = delete;
  ProbeGuard& operator=(const ProbeGuard&) = delete;

 private:
  at::Generator generator_;
  torch::Tensor rng_state_;
  std::vector<torch::Tensor> buffers_, kept_;
};

}  // namespace paisoar::train
