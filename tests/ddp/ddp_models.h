// Test models for DDP and the single-process reference they are compared with:
// the reference averages the loss of the N rank-slices (so BatchNorm sees the
// same per-slice batches it sees under DDP) and takes one SGD step.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace paisoar::testing {

// Uses head `b` only when asked, so ranks can differ in what they use.
struct BranchyImpl : torch::nn::Module {
  BranchyImpl() {
    body = register_module("body", torch::nn::Linear(8, 16));
    a = register_module("a", torch::nn::Linear(16, 4));
    b = register_module("b", torch::nn::Linear(16, 4));
    never = register_module("never", torch::nn::Linear(16, 4));
  }
  torch::Tensor forward(torch::Tensor x, bool use_b) {
    auto h = torch::relu(body(x));
    return use_b ? a(h) + b(h) : a(h);
  }
  torch::nn::Linear body{nullptr}, a{nullptr}, b{nullptr}, never{nullptr};
};
TORCH_MODULE(Branchy);

inline torch::nn::Sequential make_mlp() {
  return torch::nn::Sequential(torch::nn::Linear(8, 16), torch::nn::Functional(torch::relu),
                               torch::nn::Linear(16, 4));
}

inline torch::nn::Sequential make_bn_cnn() {
  return torch::nn::Sequential(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 4, 3)), torch::nn::BatchNorm2d(4),
      torch::nn::Functional(torch::relu), torch::nn::Flatten(), torch::nn::Linear(4 * 6 * 6, 4));
}

// Parameters as a list of plain tensors (detached copies).
inline std::vector<torch::Tensor> snapshot(const torch::nn::Module& m) {
  std::vector<torch::Tensor> out;
  for (const auto& p : m.parameters()) out.push_back(p.detach().clone());
  return out;
}

inline void expect_close(const std::vector<torch::Tensor>& got,
                         const std::vector<torch::Tensor>& want, double rtol, double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(torch::allclose(got[i], want[i], rtol, atol))
        << "tensor " << i << " max diff " << (got[i] - want[i]).abs().max().item<double>();
  }
}

}  // namespace paisoar::testing
