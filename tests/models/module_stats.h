// Test helpers for the models: a module's parameter count, parameter names in
// registration order, and its state_dict (parameters and buffers by name), the
// three things compared against torchvision's and the documented formulas.
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace paisoar::models::testing {

inline int64_t count_parameters(const torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

inline std::vector<std::string> parameter_names(const torch::nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& p : m.named_parameters()) names.push_back(p.key());
  return names;
}

// torchvision's state_dict: parameters and buffers by dotted name.
inline std::map<std::string, torch::Tensor> state_dict(const torch::nn::Module& m) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& p : m.named_parameters()) out[p.key()] = p.value();
  for (const auto& b : m.named_buffers()) out[b.key()] = b.value();
  return out;
}

}  // namespace paisoar::models::testing
