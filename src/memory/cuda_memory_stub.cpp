// device_memory on CUDA in a CPU-only build: a clear error.
#include "src/memory/cuda_memory.h"

#include <c10/util/Exception.h>

namespace paisoar::memory::detail {
namespace {

[[noreturn]] void no_cuda() {
  TORCH_CHECK(false, "memory: CUDA memory statistics need a CUDA build of paisoar "
                     "(configure with -DPAISOAR_CUDA=ON against a CUDA LibTorch)");
  std::abort();
}

}  // namespace

DeviceMemory cuda_memory(c10::DeviceIndex) { no_cuda(); }
void reset_cuda_peak(c10::DeviceIndex) { no_cuda(); }
int64_t cuda_available_bytes(c10::DeviceIndex) { no_cuda(); }

}  // namespace paisoar::memory::detail
