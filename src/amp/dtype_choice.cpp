// The autocast dtype rule: bf16 where the hardware has bf16 kernels, fp32 elsewhere.
#include "paisoar/amp/dtype_choice.h"

namespace paisoar::amp {
namespace {

// The CPU features oneDNN's fast bf16 (and fp16) kernels need.
bool cpu_has_bf16_kernels() {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("avx512bf16") || __builtin_cpu_supports("amx-bf16");
#else
  return false;  // aarch64 and others: not measured, so not assumed fast
#endif
}

}  // namespace

bool low_precision_is_fast(c10::DeviceType device, c10::ScalarType dtype) {
  if (dtype != c10::ScalarType::BFloat16 && dtype != c10::ScalarType::Half) return false;
  if (device == c10::DeviceType::CUDA) return true;
  return device == c10::DeviceType::CPU && cpu_has_bf16_kernels();
}

DtypeChoice choose_autocast_dtype(c10::DeviceType device) {
  DtypeChoice choice;
  if (device == c10::DeviceType::CUDA) {
    choice.autocast = true;
    choice.dtype = c10::ScalarType::BFloat16;
    choice.reason = "bf16 autocast: a CUDA device (on GPUs before Ampere set amp.dtype=fp16)";
  } else if (low_precision_is_fast(device, c10::ScalarType::BFloat16)) {
    choice.autocast = true;
    choice.dtype = c10::ScalarType::BFloat16;
    choice.reason = "bf16 autocast: this CPU has AVX512-BF16 or AMX";
  } else {
    choice.reason =
        "fp32: this CPU has neither AVX512-BF16 nor AMX, so bf16 kernels would run several "
        "times slower than fp32";
  }
  return choice;
}

}  // namespace paisoar::amp
