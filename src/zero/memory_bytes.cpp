// Memory accounting for ZeRO: what a replicated (DDP) rank holds, counted
// with memory accounting's storage and optimizer-state counters.
#include "paisoar/zero/memory_bytes.h"

namespace paisoar::zero {

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
