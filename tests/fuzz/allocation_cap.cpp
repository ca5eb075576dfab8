// AllocationCap: the global operator new and posix_memalign of this test
// binary check a process-wide limit (0: none) before calling malloc/memalign.
// posix_memalign is interposed by defining it here: the executable's symbol
// wins over libc's for every shared library, libc10 included.
#include "tests/fuzz/allocation_cap.h"

#include <malloc.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <new>

namespace {

std::atomic<size_t> g_limit{0};
std::atomic<size_t> g_refused{0};
std::atomic<size_t> g_largest{0};

// False (and counted) when `size` is over the limit.
bool allowed(size_t size) {
  const size_t limit = g_limit.load(std::memory_order_relaxed);
  if (limit == 0 || size <= limit) return true;
  g_refused.fetch_add(1);
  size_t largest = g_largest.load();
  while (size > largest && !g_largest.compare_exchange_weak(largest, size)) {
  }
  return false;
}

}  // namespace

void* operator new(size_t size) {
  if (!allowed(size)) throw std::bad_alloc();
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  if (!allowed(size)) return nullptr;
  return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

extern "C" int posix_memalign(void** out, size_t alignment, size_t size) {
  if (!allowed(size)) return ENOMEM;
  void* p = ::memalign(alignment, size == 0 ? 1 : size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}

namespace paisoar::testing {

AllocationCap::AllocationCap(size_t max_bytes) {
  g_refused = 0;
  g_largest = 0;
  g_limit = max_bytes;
}
AllocationCap::~AllocationCap() { g_limit = 0; }
size_t AllocationCap::refused() const { return g_refused.load(); }
size_t AllocationCap::largest_refused() const { return g_largest.load(); }

}  // namespace paisoar::testing
