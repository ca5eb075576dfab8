// tensor_replicated_parameters: every parameter minus the shards the
// tensor-parallel layers hold (tensor_parallel::parameter_splits), by tensor,
// so a shard tied under a second name (an output layer sharing the
// embedding) is still a shard.
#include "paisoar/hybrid/replicated_parameters.h"

#include <unordered_set>

#include "paisoar/tensor_parallel/sharding.h"

namespace paisoar::hybrid {

std::vector<torch::Tensor> tensor_replicated_parameters(const torch::nn::Module& module) {
  const auto splits = tensor_parallel::parameter_splits(module);
  const auto named = module.named_parameters();
  std::unordered_set<const void*> sharded;
  for (const auto& p : named) {
    if (splits.count(p.key())) sharded.insert(p.value().unsafeGetTensorImpl());
  }
  std::vector<torch::Tensor> replicated;
  for (const auto& p : named) {
    if (!sharded.count(p.value().unsafeGetTensorImpl())) replicated.push_back(p.value());
  }
  return replicated;
}

}  // namespace paisoar::hybrid
