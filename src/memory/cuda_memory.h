// The CUDA side of device_memory: cuda_memory.cpp in CUDA builds, the stub in
// CPU-only ones (CMake picks the file, PAISOAR_CUDA).
#pragma once

#include "paisoar/memory/device_memory.h"

namespace paisoar::memory::detail {

DeviceMemory cuda_memory(c10::DeviceIndex index);
void reset_cuda_peak(c10::DeviceIndex index);
// The device's free memory plus what the caching allocator reserved and does not use.
int64_t cuda_available_bytes(c10::DeviceIndex index);

}  // namespace paisoar::memory::detail
