// The tracking CPU allocator. Each allocation is forwarded to the allocator
// that was installed before (c10's DefaultCPUAllocator, unless another was set); its DataPtr
// is parked in a sharded map keyed by address, and the tensor gets a DataPtr
// with context == data and a plain deleter, exactly like the default
// allocator's, so raw_allocate/raw_deallocate keep working.
#include "paisoar/memory/tracking_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <array>
#include <atomic>
#include <mutex>
#include <unordered_map>

namespace paisoar::memory {
namespace {

constexpr uint8_t kPriority = 10;  // above c10's default (0); checked after install
constexpr size_t kShards = 64;

struct Entry {
  c10::DataPtr inner;
  int64_t bytes;
};

// Process-wide; never destroyed, since tensors freed during static destruction
// still come back through its deleter. Counters are atomics; each shard's map
// is guarded by its own mutex.
class TrackingAllocator final : public c10::Allocator {
 public:
  explicit TrackingAllocator(c10::Allocator* inner) : inner_(inner) {}

  c10::DataPtr allocate(size_t n) override {
    c10::DataPtr inner = inner_->allocate(n);
    void* data = inner.get();
    if (data == nullptr) return inner;  // zero bytes: nothing to count
    const auto bytes = static_cast<int64_t>(n);
    const c10::Device device = inner.device();
    {
      auto& shard = shard_of(data);
      std::lock_guard<std::mutex> lock(shard.mutex);
      auto it = shard.entries.find(data);
      if (it != shard.entries.end()) {
        // The old block at this address was freed behind our back (through
        // the wrapped allocator's raw deleter): forget it without freeing again.
        it->second.inner.release_context();
        current_.fetch_sub(it->second.bytes, std::memory_order_relaxed);
        live_.fetch_sub(1, std::memory_order_relaxed);
        shard.entries.erase(it);
      }
      shard.entries.emplace(data, Entry{std::move(inner), bytes});
    }
    const int64_t now = current_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    int64_t peak = peak_.load(std::memory_order_relaxed);
    while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    live_.fetch_add(1, std::memory_order_relaxed);
    total_.fetch_add(1, std::memory_order_relaxed);
    return {data, data, &TrackingAllocator::deallocate, device};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &TrackingAllocator::deallocate; }

  // Both blocks are the wrapped allocator's memory underneath.
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    inner_->copy_data(dest, src, count);
  }

  AllocatorCounts counts() const {
    AllocatorCounts c;
    c.current_bytes = current_.load();
    c.peak_bytes = peak_.load();
    c.live_allocations = live_.load();
    c.total_allocations = total_.load();
    return c;
  }

  void reset_peak() { peak_.store(current_.load()); }

  static TrackingAllocator* instance;

 private:
  struct Shard {
    std::mutex mutex;
    std::unordered_map<void*, Entry> entries;
  };

  static Shard& shard_of(void* p) {
    return instance->shards_[(reinterpret_cast<uintptr_t>(p) >> 6) % kShards];
  }

  static void deallocate(void* data) {
    Entry entry;
    {
      auto& shard = shard_of(data);
      std::lock_guard<std::mutex> lock(shard.mutex);
      auto it = shard.entries.find(data);
      if (it == shard.entries.end()) {
        // Not ours: a buffer taken from the wrapped allocator before we were
        // installed (or by kernels that bypass GetCPUAllocator()) and handed
        // back through its raw deleter. It belongs to the wrapped allocator.
        instance->inner_->raw_deallocate(data);
        return;
      }
      entry = std::move(it->second);
      shard.entries.erase(it);
    }
    instance->current_.fetch_sub(entry.bytes, std::memory_order_relaxed);
    instance->live_.fetch_sub(1, std::memory_order_relaxed);
    // entry.inner's destructor frees through the wrapped allocator's deleter.
  }

  c10::Allocator* inner_;
  mutable std::array<Shard, kShards> shards_;
  mutable std::atomic<int64_t> current_{0}, peak_{0}, live_{0}, total_{0};
};

TrackingAllocator* TrackingAllocator::instance = nullptr;
std::mutex install_mutex;

}  // namespace

void install_cpu_tracking_allocator() {
  std::lock_guard<std::mutex> lock(install_mutex);
  if (TrackingAllocator::instance == nullptr) {
    TrackingAllocator::instance = new TrackingAllocator(c10::GetCPUAllocator());
    c10::SetCPUAllocator(TrackingAllocator::instance, kPriority);
  }
  TORCH_CHECK(c10::GetCPUAllocator() == TrackingAllocator::instance,
              "memory: the CPU tracking allocator is not LibTorch's CPU allocator: another allocator "
              "was set with c10::SetCPUAllocator at a priority above ", static_cast<int>(kPriority),
              "; CPU memory cannot be counted (use resident_bytes() instead)");
}

bool cpu_tracking_allocator_installed() {
  std::lock_guard<std::mutex> lock(install_mutex);
  return TrackingAllocator::instance != nullptr &&
         c10::GetCPUAllocator() == TrackingAllocator::instance;
}

AllocatorCounts cpu_allocator_counts() {
  auto* a = TrackingAllocator::instance;
  return a ? a->counts() : AllocatorCounts{};
}

void reset_cpu_peak() {
  if (auto* a = TrackingAllocator::instance) a->reset_peak();
}

}  // namespace paisoar::memory
