// amp::autocast: saving, setting and restoring the thread's autocast state.
#include "paisoar/amp/autocast.h"

#include "src/amp/autocast_compat.h"

namespace paisoar::amp {
namespace {

void check_dtype(c10::DeviceType device, c10::ScalarType dtype) {
  bool ok = device == c10::DeviceType::CPU
                ? dtype == c10::ScalarType::BFloat16
                : dtype == c10::ScalarType::BFloat16 || dtype == c10::ScalarType::Half;
  if (!ok) {
    throw std::invalid_argument(
        std::string("autocast on ") + c10::DeviceTypeName(device, /*lower_case=*/true) +
        " does not take dtype " + c10::toString(dtype) +
        (device == c10::DeviceType::CPU
             ? ": LibTorch 1.13's CPU autocast supports only bfloat16"
             : ": use float16 or bfloat16"));
  }
}

// LibTorch 1.13 sends bf16 convolutions to oneDNN only on CPUs with AVX-512
// (BW/VL/DQ); elsewhere they fall back to a generic kernel many times slower
// than fp32 (docs/BENCHMARKS.md, "Mixed precision training step").
void warn_if_cpu_bf16_is_slow(c10::DeviceType device) {
  if (device != c10::DeviceType::CPU) return;
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512bw")) return;
  TORCH_WARN_ONCE(
      "paisoar: bf16 autocast on a CPU without AVX-512: LibTorch 1.13 runs bf16 convolutions "
      "through a slow fallback here, so training steps take several times longer than in "
      "fp32. Train in fp32 on this machine (bf16 pays off on CPUs with AVX-512/AMX and on GPUs).");
#endif
}

}  // namespace

autocast::autocast(const AutocastOptions& options) : device_(options.device) {
  detail::require_supported(device_);
  if (options.enabled) {
    check_dtype(device_, options.dtype);
    warn_if_cpu_bf16_is_slow(device_);
  }
  prev_enabled_ = detail::enabled(device_);
  prev_dtype_ = detail::dtype(device_);
  prev_cache_enabled_ = at::autocast::is_autocast_cache_enabled();
  detail::set_enabled(device_, options.enabled);
  if (options.enabled) detail::set_dtype(device_, options.dtype);
  at::autocast::set_autocast_cache_enabled(options.cache_enabled);
  at::autocast::increment_nesting();
}

autocast::~autocast() {
  // The outermost guard drops the low-precision weight copies it cached.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  detail::set_enabled(device_, prev_enabled_);
  detail::set_dtype(device_, prev_dtype_);
  at::autocast::set_autocast_cache_enabled(prev_cache_enabled_);
}

bool is_autocast_enabled(c10::DeviceType device) {
  detail::require_supported(device);
  return detail::enabled(device);
}

c10::ScalarType autocast_dtype(c10::DeviceType device) {
  detail::require_supported(device);
  return detail::dtype(device);
}

}  // namespace paisoar::amp
