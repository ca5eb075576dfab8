// device_memory, PeakMeter and resident_bytes.
#include "paisoar/memory/device_memory.h"

#include <c10/util/Exception.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "paisoar/memory/tracking_allocator.h"
#include "src/memory/cuda_memory.h"

namespace paisoar::memory {

DeviceMemory device_memory(c10::Device device) {
  if (device.is_cuda()) return detail::cuda_memory(device.index());
  TORCH_CHECK(device.is_cpu(), "memory: no memory statistics for device ", device.str(),
              "; use cpu or cuda");
  DeviceMemory m;
  if (!cpu_tracking_allocator_installed()) return m;
  const auto counts = cpu_allocator_counts();
  m.current_bytes = counts.current_bytes;
  m.peak_bytes = counts.peak_bytes;
  m.reserved_bytes = counts.current_bytes;  // no cache: what is allocated is what is held
  return m;
}

void reset_peak_memory(c10::Device device) {
  if (device.is_cuda()) return detail::reset_cuda_peak(device.index());
  TORCH_CHECK(device.is_cpu(), "memory: no memory statistics for device ", device.str(),
              "; use cpu or cuda");
  reset_cpu_peak();
}

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return -1;
  return resident_pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

int64_t available_bytes(c10::Device device) {
  if (device.is_cuda()) return detail::cuda_available_bytes(device.index());
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = -1;
  while (meminfo >> key) {
    if (key == "MemAvailable:") {
      meminfo >> kib;
      break;
    }
    meminfo.ignore(1 << 10, '\n');
  }
  return kib < 0 ? -1 : kib * 1024;
}

PeakMeter::PeakMeter(c10::Device device) : device_(device) {
  reset_peak_memory(device_);
  start_bytes_ = device_memory(device_).current_bytes;
}

int64_t PeakMeter::peak_above_start() const {
  if (start_bytes_ < 0) return -1;
  const int64_t peak = device_memory(device_).peak_bytes;
  return peak < 0 ? -1 : peak - start_bytes_;
}

}  // namespace paisoar::memory
