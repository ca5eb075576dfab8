// BatchStoragePool: free blocks by size; a tensor's deleter hands its block
// back (or frees it when the pool already keeps enough).
#include "src/data/batch_storage_pool.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <new>

namespace paisoar::data {
namespace {

constexpr size_t kAlignment = 64;

}  // namespace

std::shared_ptr<BatchStoragePool> BatchStoragePool::create(size_t keep) {
  return std::shared_ptr<BatchStoragePool>(new BatchStoragePool(keep));
}

BatchStoragePool::~BatchStoragePool() {
  for (auto& [bytes, block] : free_) std::free(block);
}

torch::Tensor BatchStoragePool::empty(at::IntArrayRef shape, at::ScalarType dtype) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  const size_t bytes = std::max<size_t>(1, static_cast<size_t>(numel) * c10::elementSize(dtype));
  void* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it != free_.end()) {
      block = it->second;
      free_.erase(it);
    }
  }
  if (block == nullptr) {
    block = std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    if (block == nullptr) throw std::bad_alloc();
  }
  auto self = shared_from_this();
  return torch::from_blob(
      block, shape, [self, bytes](void* p) { self->give_back(p, bytes); },
      torch::TensorOptions().dtype(dtype));
}

void BatchStoragePool::give_back(void* block, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.size() < keep_) {
      free_.emplace(bytes, block);
      return;
    }
  }
  std::free(block);
}

}  // namespace paisoar::data
