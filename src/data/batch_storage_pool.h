// BatchStoragePool: recycles the CPU memory of a loader's batches. A batch is
// allocated from the pool and its memory comes back when the last tensor
// viewing it is dropped (by the consumer, usually, on any thread), so a stream
// of equal batches maps its memory once: fresh, a 38 MB batch (64 224x224
// float images) is an mmap whose every page faults on first write, and that
// cost a third of a worker's time.
#pragma once

#include <torch/types.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace paisoar::data {

class BatchStoragePool : public std::enable_shared_from_this<BatchStoragePool> {
 public:
  // Holds at most `keep` free blocks; more are freed when they come back.
  static std::shared_ptr<BatchStoragePool> create(size_t keep);
  ~BatchStoragePool();
  BatchStoragePool(const BatchStoragePool&) = delete;
  BatchStoragePool& operator=(const BatchStoragePool&) = delete;

  // An uninitialised contiguous CPU tensor. Thread-safe. Its memory keeps the
  // pool alive until it is returned.
  torch::Tensor empty(at::IntArrayRef shape, at::ScalarType dtype);

 private:
  explicit BatchStoragePool(size_t keep) : keep_(keep) {}
  void give_back(void* block, size_t bytes);

  const size_t keep_;
  std::mutex mutex_;
  std::multimap<size_t, void*> free_;  // bytes -> block; guarded by mutex_
};

}  // namespace paisoar::data
