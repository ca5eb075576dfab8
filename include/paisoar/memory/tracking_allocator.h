// A counting CPU allocator: wraps LibTorch's CPU allocator so that the bytes
// of live CPU tensors (current and peak) are known, the CPU counterpart of
// CUDA's caching-allocator statistics. Installed process-wide with
// c10::SetCPUAllocator at a priority above the default one.
#pragma once

#include <cstdint>

namespace paisoar::memory {

struct AllocatorCounts {
  int64_t current_bytes = 0;     // bytes of live allocations made through the tracker
  int64_t peak_bytes = 0;        // the most current_bytes reached since install or reset_peak
  int64_t live_allocations = 0;  // allocations not yet freed
  int64_t total_allocations = 0; // allocations since install
};

// Installs the tracker in front of the current CPU allocator; idempotent and
// thread-safe. Only allocations made after the first call are counted (ones
// made before are freed by their own allocator, uncounted). The tracker stays
// installed for the life of the process. Throws c10::Error if another
// allocator was installed at a higher priority, so the tracker would not see
// allocations.
void install_cpu_tracking_allocator();
bool cpu_tracking_allocator_installed();

// Counts as of now (all zero if not installed). Sizes are the requested bytes
// (a tensor of N floats counts 4N), not the allocator's rounding.
AllocatorCounts cpu_allocator_counts();

// Sets the peak to the current bytes, to measure the peak of a region.
void reset_cpu_peak();

}  // namespace paisoar::memory
