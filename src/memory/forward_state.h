// What a checkpointed segment's forward ran under and its recomputation must
// run under again: the RNG states (CPU, and CUDA for a CUDA input) and the
// autocast state of both devices.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>

#include "paisoar/amp/autocast.h"

namespace paisoar::memory::detail {

struct ForwardState {
  // The calling thread's state now. With `rng`, the CPU generator's state and,
  // when `input` is on a CUDA device, that device's default generator state.
  static ForwardState capture(const at::Tensor& input, bool rng);

  std::optional<at::Tensor> cpu_rng;
  std::optional<at::Tensor> cuda_rng;
  c10::DeviceIndex cuda_device = -1;
  amp::AutocastOptions cpu_autocast;
  amp::AutocastOptions cuda_autocast;
};

// While alive, the thread runs under `state`: generators set to the recorded
// states (and put back as they were on destruction, so replaying does not
// change the random numbers the rest of the program draws), autocast as
// recorded (nested guards, restored on destruction).
class ReplayGuard {
 public:
  explicit ReplayGuard(const ForwardState& state);
  ~ReplayGuard();
  ReplayGuard(const ReplayGuard&) = delete;
  ReplayGuard& operator=(const ReplayGuard&) = delete;

 private:
  std::optional<at::Tensor> saved_cpu_rng_;
  std::optional<at::Tensor> saved_cuda_rng_;
  c10::DeviceIndex cuda_device_ = -1;
  std::optional<amp::autocast> cpu_autocast_;
  std::optional<amp::autocast> cuda_autocast_;
};

}  // namespace paisoar::memory::detail
