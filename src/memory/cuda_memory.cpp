// device_memory on CUDA: the caching allocator's statistics (what
// torch.cuda.memory_allocated / max_memory_allocated report).
#include "src/memory/cuda_memory.h"

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>

#include <algorithm>

namespace paisoar::memory::detail {
namespace {

int device_of(c10::DeviceIndex index) {
  const int visible = c10::cuda::device_count();
  TORCH_CHECK(visible > 0, "memory: no CUDA device is visible to this process, so there are no CUDA "
              "memory statistics (check nvidia-smi and CUDA_VISIBLE_DEVICES, or measure the cpu)");
  const int device = index < 0 ? c10::cuda::current_device() : index;
  TORCH_CHECK(device < visible, "memory: CUDA device ", device, " does not exist (", visible,
              " visible); use an index below ", visible);
  return device;
}

}  // namespace

DeviceMemory cuda_memory(c10::DeviceIndex index) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device_of(index));
  // Index 0 of each StatArray is the aggregate over pool kinds (StatType::AGGREGATE,
  // whose namespace moved between 2.x releases).
  constexpr size_t all = 0;
  DeviceMemory m;
  m.current_bytes = stats.allocated_bytes[all].current;
  m.peak_bytes = stats.allocated_bytes[all].peak;
  m.reserved_bytes = stats.reserved_bytes[all].current;
  return m;
}

int64_t cuda_available_bytes(c10::DeviceIndex index) {
  const int device = device_of(index);
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    (void)cudaGetLastError();  // clear it: the prediction then goes without a budget
    return -1;
  }
  const DeviceMemory m = cuda_memory(static_cast<c10::DeviceIndex>(device));
  return static_cast<int64_t>(free) + std::max<int64_t>(0, m.reserved_bytes - m.current_bytes);
}

void reset_cuda_peak(c10::DeviceIndex index) {
  c10::cuda::CUDACachingAllocator::resetPeakStats(device_of(index));
}

}  // namespace paisoar::memory::detail
