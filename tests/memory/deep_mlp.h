// Test models for activation checkpointing: a deep MLP of transformer-MLP-like
// blocks (Linear(w, 4w)-ReLU-[Dropout]-Linear(4w, w)-ReLU), as a Sequential
// whose children "0", "1", ... are the blocks.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace paisoar::testing {

struct BlockImpl : torch::nn::Module {
  BlockImpl(int64_t width, double dropout) {
    fc1 = register_module("fc1", torch::nn::Linear(width, 4 * width));
    fc2 = register_module("fc2", torch::nn::Linear(4 * width, width));
    drop = register_module("drop", torch::nn::Dropout(dropout));
  }
  torch::Tensor forward(torch::Tensor x) {
    return torch::relu(fc2(drop(torch::relu(fc1(x)))));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::Dropout drop{nullptr};
};
TORCH_MODULE(Block);

inline torch::nn::Sequential deep_mlp(int blocks, int64_t width, double dropout = 0.0) {
  torch::nn::Sequential model;
  for (int i = 0; i < blocks; ++i) model->push_back(Block(width, dropout));
  return model;
}

// Gradients of the parameters (clones), in order.
inline std::vector<torch::Tensor> grads_of(const torch::nn::Module& m) {
  std::vector<torch::Tensor> out;
  for (const auto& p : m.parameters()) out.push_back(p.grad().clone());
  return out;
}

inline void zero_grads(torch::nn::Module& m) {
  for (auto& p : m.parameters()) p.mutable_grad() = torch::Tensor();
}

}  // namespace paisoar::testing
