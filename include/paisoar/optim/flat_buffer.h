// FlatBuffer: a model's parameters and gradients moved into two contiguous
// buffers, so an optimizer step (or a gradient allreduce) is a few kernels over
// all parameters instead of several calls per tensor.
#pragma once

#include <torch/types.h>

#include <vector>

namespace paisoar::optim {

// After construction each parameter's data and grad alias a slice of data() and
// grad() (plain aliases, not autograd views, so zero_grad(false) and autograd's
// in-place accumulation keep them; LibTorch 2.x's default zero_grad() drops
// them, and adopt_gradients() takes the new gradients back in). Parameters must share one dtype
// and device. Not thread-safe; owned by the optimizer that made it.
class FlatBuffer {
 public:
  // Throws c10::ValueError naming the first parameter of another dtype/device.
  explicit FlatBuffer(std::vector<torch::Tensor> params);

  torch::Tensor& data() { return data_; }
  torch::Tensor& grad() { return grad_; }
  const std::vector<torch::Tensor>& params() const { return params_; }
  const std::vector<int64_t>& offsets() const { return offsets_; }
  const std::vector<int64_t>& numels() const { return numels_; }
  // A slice of `flat` (a buffer shaped like data()) for parameter i.
  torch::Tensor slice(const torch::Tensor& flat, size_t i) const;
  // Re-aliases any gradient that something replaced (e.g. set to a new tensor),
  // copying its values in; gradients left undefined become zeros. Call before a step.
  void adopt_gradients();

 private:
  torch::Tensor alias(const torch::Tensor& flat, size_t i) const;
  std::vector<torch::Tensor> params_;
  std::vector<int64_t> offsets_, numels_;
  torch::Tensor data_, grad_;
};

}  // namespace paisoar::optim
