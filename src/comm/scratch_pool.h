// ScratchPool: reusable receive buffers for collectives that need one (the
// peers' chunks in reduce_scatter). Large tensors come from mmap and every
// fresh one page-faults on first touch, which cost more than the transfer itself.
#pragma once

#include <ATen/ATen.h>

#include <mutex>
#include <vector>

namespace paisoar::comm::detail {

// Thread-safe: take() and give_back() may run on different threads (issue vs wait).
class ScratchPool {
 public:
  explicit ScratchPool(size_t max_buffers = 4) : max_buffers_(max_buffers) {}

  // A contiguous uint8 tensor of at least `bytes` bytes on `device` (a pooled one
  // when one is big enough).
  at::Tensor take(int64_t bytes, at::Device device);
  // Returns a buffer from take(); the pool keeps the largest `max_buffers` of them.
  void give_back(at::Tensor buffer);

 private:
  std::mutex mutex_;
  std::vector<at::Tensor> free_;  // guarded by mutex_
  size_t max_buffers_;
};

}  // namespace paisoar::comm::detail
