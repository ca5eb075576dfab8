// amp::autocast: saving, setting and restoring the thread's autocast state
// through LibTorch 2.x's device-generic autocast API.
#include "paisoar/amp/autocast.h"

#include <c10/util/Exception.h>

#include <ATen/autocast_mode.h>

#include <stdexcept>
#include <string>

#include "paisoar/amp/dtype_choice.h"

namespace paisoar::amp {
namespace {

void require_supported(c10::DeviceType device) {
  if (device != c10::DeviceType::CPU && device != c10::DeviceType::CUDA) {
    C10_THROW_ERROR(ValueError, std::string("autocast supports cpu and cuda devices, not ") +
                                c10::DeviceTypeName(device, /*lower_case=*/true));
  }
}

void check_dtype(c10::DeviceType device, c10::ScalarType dtype) {
  if (dtype != c10::ScalarType::BFloat16 && dtype != c10::ScalarType::Half) {
    C10_THROW_ERROR(ValueError, std::string("autocast on ") +
                                c10::DeviceTypeName(device, /*lower_case=*/true) +
                                " does not take dtype " + c10::toString(dtype) +
                                ": use float16 or bfloat16");
  }
}

// Without AVX512-BF16 or AMX, LibTorch's CPU bf16/fp16 convolutions and
// matmuls fall back to generic kernels many times slower than fp32
// (docs/BENCHMARKS.md, "Mixed precision training step").
void warn_if_slow(c10::DeviceType device, c10::ScalarType dtype) {
  if (low_precision_is_fast(device, dtype)) return;
  TORCH_WARN_ONCE("paisoar: ", c10::toString(dtype),
                  " autocast on a CPU without AVX512-BF16 or AMX: LibTorch runs its convolutions "
                  "and matmuls through slow fallbacks here, so training steps take several times "
                  "longer than in fp32. Train in fp32 on this machine (amp.dtype: auto chooses it).");
}

}  // namespace

autocast::autocast(const AutocastOptions& options) : device_(options.device) {
  require_supported(device_);
  if (options.enabled) {
    check_dtype(device_, options.dtype);
    warn_if_slow(device_, options.dtype);
  }
  prev_enabled_ = at::autocast::is_autocast_enabled(device_);
  prev_dtype_ = at::autocast::get_autocast_dtype(device_);
  prev_cache_enabled_ = at::autocast::is_autocast_cache_enabled();
  at::autocast::set_autocast_enabled(device_, options.enabled);
  if (options.enabled) at::autocast::set_autocast_dtype(device_, options.dtype);
  at::autocast::set_autocast_cache_enabled(options.cache_enabled);
  at::autocast::increment_nesting();
}

autocast::~autocast() {
  // The outermost guard drops the low-precision weight copies it cached.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_, prev_enabled_);
  at::autocast::set_autocast_dtype(device_, prev_dtype_);
  at::autocast::set_autocast_cache_enabled(prev_cache_enabled_);
}

bool is_autocast_enabled(c10::DeviceType device) {
  require_supported(device);
  return at::autocast::is_autocast_enabled(device);
}

c10::ScalarType autocast_dtype(c10::DeviceType device) {
  require_supported(device);
  return at::autocast::get_autocast_dtype(device);
}

}  // namespace paisoar::amp
