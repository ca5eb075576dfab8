// The one place that knows LibTorch's autocast API version: 1.13 has per-device
// functions (set_cpu_enabled, set_autocast_cpu_dtype, ...); 2.x takes the device.
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <stdexcept>
#include <string>

namespace paisoar::amp::detail {

inline void require_supported(c10::DeviceType device) {
  if (device != c10::DeviceType::CPU && device != c10::DeviceType::CUDA) {
    throw std::invalid_argument(std::string("autocast supports cpu and cuda devices, not ") +
                                c10::DeviceTypeName(device));
  }
}

#if TORCH_VERSION_MAJOR >= 2
inline bool enabled(c10::DeviceType d) { return at::autocast::is_autocast_enabled(d); }
inline void set_enabled(c10::DeviceType d, bool on) { at::autocast::set_autocast_enabled(d, on); }
inline c10::ScalarType dtype(c10::DeviceType d) { return at::autocast::get_autocast_dtype(d); }
inline void set_dtype(c10::DeviceType d, c10::ScalarType t) { at::autocast::set_autocast_dtype(d, t); }
#else
inline bool enabled(c10::DeviceType d) {
  return d == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
inline void set_enabled(c10::DeviceType d, bool on) {
  if (d == c10::DeviceType::CUDA) at::autocast::set_enabled(on);
  else at::autocast::set_cpu_enabled(on);
}
inline c10::ScalarType dtype(c10::DeviceType d) {
  return d == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                    : at::autocast::get_autocast_cpu_dtype();
}
inline void set_dtype(c10::DeviceType d, c10::ScalarType t) {
  if (d == c10::DeviceType::CUDA) at::autocast::set_autocast_gpu_dtype(t);
  else at::autocast::set_autocast_cpu_dtype(t);
}
#endif

}  // namespace paisoar::amp::detail
