// Bytes allocated on a device, current and peak, from the allocator that
// knows them: CUDA's caching allocator on GPUs, the tracking allocator
// (tracking_allocator.h) on the CPU; and the process's resident memory.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>

namespace paisoar::memory {

// -1 means not measured (the CPU tracker is not installed).
struct DeviceMemory {
  int64_t current_bytes = -1;
  int64_t peak_bytes = -1;
  int64_t reserved_bytes = -1;  // CUDA: held by the caching allocator, used or not
};

// Throws c10::Error for a CUDA device in a build without CUDA (PAISOAR_CUDA=OFF)
// and for other device types.
DeviceMemory device_memory(c10::Device device);

// Starts a new peak at the current level.
void reset_peak_memory(c10::Device device);

// The process's resident set size (from /proc/self/statm); -1 where there is none.
int64_t resident_bytes();

// What more the device can give: on CUDA the device's free memory
// (cudaMemGetInfo) plus what the caching allocator holds unused; on the CPU
// the machine's available memory (MemAvailable in /proc/meminfo); -1 where
// neither is known.
int64_t available_bytes(c10::Device device);

// The peak bytes a region allocated on top of what was live when the meter
// was made: wrap forward+backward to get a step's peak activation memory.
// Resets the device's peak, so meters must not overlap (one per step).
class PeakMeter {
 public:
  explicit PeakMeter(c10::Device device = c10::Device(c10::DeviceType::CPU));
  // -1 if the device's memory is not measured (CPU without the tracker).
  int64_t peak_above_start() const;

 private:
  c10::Device device_;
  int64_t start_bytes_;
};

}  // namespace paisoar::memory
