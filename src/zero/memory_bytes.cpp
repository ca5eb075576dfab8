// Memory accounting for ZeRO: distinct storages' bytes, and the optimizer's
// state read through its own save() (the layout checkpoints use).
#include "paisoar/zero/memory_bytes.h"

#include <unordered_set>

#include "paisoar/checkpoint/optimizer_state.h"

namespace paisoar::zero {

int64_t storage_bytes(const std::vector<torch::Tensor>& tensors) {
  std::unordered_set<const void*> seen;
  int64_t total = 0;
  for (const auto& t : tensors) {
    if (!t.defined()) continue;
    const auto* impl = t.storage().unsafeGetStorageImpl();
    if (seen.insert(impl).second) total += static_cast<int64_t>(impl->nbytes());
  }
  return total;
}

int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer) {
  checkpoint::TensorMap tensors;
  checkpoint::Metadata metadata;
  checkpoint::add_optimizer_state(optimizer, tensors, metadata);
  int64_t total = 0;
  for (const auto& [name, t] : tensors) total += t.numel() * static_cast<int64_t>(t.element_size());
  return total;
}

MemoryBytes replicated_memory(const std::vector<torch::Tensor>& params,
                              const torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : params) grads.push_back(p.grad());
  MemoryBytes m;
  m.params = storage_bytes(params);
  m.grads = storage_bytes(grads);
  m.optimizer_state = optimizer_state_bytes(optimizer);
  return m;
}

}  // namespace paisoar::zero
