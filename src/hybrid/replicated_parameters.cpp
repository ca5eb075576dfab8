// tensor_replicated_parameters: every parameter minus the shards the
// tensor-parallel layers hold (tensor_parallel::parameter_splits).
#include "paisoar/hybrid/replicated_parameters.h"

#include "paisoar/tensor_parallel/sharding.h"

namespace paisoar::hybrid {

std::vector<torch::Tensor> tensor_replicated_parameters(const torch::nn::Module& module) {
  const auto splits = tensor_parallel::parameter_splits(module);
  std::vector<torch::Tensor> replicated;
  for (const auto& p : module.named_parameters()) {
    if (!splits.count(p.key())) replicated.push_back(p.value());
  }
  return replicated;
}

}  // namespace paisoar::hybrid
