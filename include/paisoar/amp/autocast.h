// amp::autocast: an RAII guard that runs a region in mixed precision (or, with
// enabled=false, back in fp32), the C++ counterpart of torch.autocast.
#pragma once

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace paisoar::amp {

struct AutocastOptions {
  c10::DeviceType device = c10::DeviceType::CPU;
  // bfloat16 or float16, on the CPU and on CUDA. On CPUs without AVX512-BF16
  // or AMX both are slower than fp32 (a warning says so once): see dtype_choice.h.
  c10::ScalarType dtype = c10::ScalarType::BFloat16;
  // false: run the region in full precision inside an autocast region
  // (torch's `autocast(enabled=False)`, for ops that must stay fp32).
  bool enabled = true;
  // Reuse the low-precision copy of a weight within the region.
  bool cache_enabled = true;
};

// Autocast state is per thread: a guard affects only the thread that made it
// (autograd's backward does not need one). Guards nest; each restores the
// state it found, and the outermost one clears the weight-cast cache.
// Throws c10::ValueError for a dtype the device's autocast does not take.
class autocast {
 public:
  explicit autocast(const AutocastOptions& options = {});
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  c10::DeviceType device_;
  bool prev_enabled_;
  c10::ScalarType prev_dtype_;
  bool prev_cache_enabled_;
};

// Whether autocast is on for `device` in this thread, and with which dtype.
bool is_autocast_enabled(c10::DeviceType device = c10::DeviceType::CPU);
c10::ScalarType autocast_dtype(c10::DeviceType device = c10::DeviceType::CPU);

}  // namespace paisoar::amp
