// Test support for the fuzz tests: while an AllocationCap is alive, any single
// allocation larger than its limit is refused and counted. It covers C++'s
// operator new (std::vector, std::string) and posix_memalign, which c10's CPU
// allocator uses for tensors, so a reader that trusts a size field from a
// damaged file is caught before it allocates gigabytes. Only the fuzz test
// binary links allocation_cap.cpp (it replaces the global operator new).
#pragma once

#include <cstddef>

namespace paisoar::testing {

// Not nestable; one at a time. The counters are process-wide.
class AllocationCap {
 public:
  explicit AllocationCap(size_t max_bytes);
  ~AllocationCap();
  AllocationCap(const AllocationCap&) = delete;
  AllocationCap& operator=(const AllocationCap&) = delete;

  // Allocations refused since construction, and the largest one asked for.
  size_t refused() const;
  size_t largest_refused() const;
};

}  // namespace paisoar::testing
