// ScratchPool: best-fit reuse of byte buffers.
#include "src/comm/scratch_pool.h"

#include <algorithm>

namespace paisoar::comm::detail {

at::Tensor ScratchPool::take(int64_t bytes, at::Device device) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->device() == device && it->numel() >= bytes && (best == free_.end() || it->numel() < best->numel())) best = it;
    }
    if (best != free_.end()) {
      at::Tensor found = *best;
      free_.erase(best);
      return found;
    }
  }
  return at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(device));
}

void ScratchPool::give_back(at::Tensor buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(std::move(buffer));
  if (free_.size() > max_buffers_) {
    auto smallest = std::min_element(free_.begin(), free_.end(), [](const auto& a, const auto& b) {
      return a.numel() < b.numel();
    });
    free_.erase(smallest);
  }
}

}  // namespace paisoar::comm::detail
