// MemoryBytes: the bytes of parameters, gradients and optimizer state one rank
// holds, counted from the tensor storages it owns (each storage once), to set
// against ZeRO's formulas (fp32 Adam: DDP 16 bytes/param; stage 1 4+4+8/N;
// stage 2 4+12/N; stage 3 16/N).
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "paisoar/memory/memory_report.h"

namespace paisoar::zero {

struct MemoryBytes {
  int64_t params = 0;
  int64_t grads = 0;
  int64_t optimizer_state = 0;
  int64_t total() const { return params + grads + optimizer_state; }
};

// The counting itself is memory accounting's (paisoar/memory/memory_report.h).
using memory::optimizer_state_bytes;
using memory::storage_bytes;
// What a plain (DDP) rank holds: all parameters, their gradients, the state.
MemoryBytes replicated_memory(const std::vector<torch::Tensor>& params,
                              const torch::optim::Optimizer& optimizer);

}  // namespace paisoar::zero
