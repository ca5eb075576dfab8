// Precision: amp.dtype to autocast options (auto asks amp/dtype_choice.h),
// and the guard's members constructed in the order the scopes nest.
#include "src/config/precision_context.h"

#include "paisoar/amp/dtype_choice.h"
#include "src/config/region_checks.h"

namespace paisoar::train {

Precision precision_for(const AmpConfig& amp, c10::DeviceType device) {
  Precision p;
  p.autocast.device = device;
  p.policy = policy_of(amp);
  if (amp.dtype == AmpDtype::Auto) {
    const amp::DtypeChoice choice = amp::choose_autocast_dtype(device);
    p.autocast.enabled = choice.autocast;
    p.autocast.dtype = choice.dtype;
    p.name = choice.autocast ? (choice.dtype == c10::ScalarType::Half ? "fp16" : "bf16") : "fp32";
    p.reason = "amp.dtype auto: " + choice.reason;
    return p;
  }
  p.autocast.enabled = amp.dtype != AmpDtype::FP32;
  p.autocast.dtype = amp.dtype == AmpDtype::FP16 ? c10::ScalarType::Half : c10::ScalarType::BFloat16;
  p.name = name_of(amp.dtype);
  p.reason = "amp.dtype " + p.name + " (set in the config)";
  return p;
}

std::string fast_precision_on(c10::DeviceType device) {
  if (!amp::low_precision_is_fast(device, c10::ScalarType::BFloat16)) return "";
  return device == c10::DeviceType::CUDA ? "amp.dtype: bf16 (or fp16, with loss scaling)"
                                         : "amp.dtype: bf16 (this CPU has AVX512-BF16/AMX)";
}

PrecisionContext::PrecisionContext(const Precision& precision, amp::RegionRunner* recompute)
    : autocast_(precision.autocast), pins_(precision.policy, precision.autocast.device) {
  if (recompute) recompute_.emplace(*recompute);
}

}  // namespace paisoar::train
