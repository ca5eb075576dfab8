// Capturing and replaying a segment's RNG and autocast state. The CUDA
// generator is reached through ATen's CUDA hooks, a runtime check: a CPU-only
// LibTorch never has a CUDA input, so nothing here needs a CUDA build.
#include "src/memory/forward_state.h"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/Generator.h>

#include <mutex>

namespace paisoar::memory::detail {
namespace {

at::Generator generator_of(c10::DeviceType type, c10::DeviceIndex index) {
  return at::globalContext().defaultGenerator(c10::Device(type, index));
}

at::Tensor get_state(at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_state(at::Generator gen, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

amp::AutocastOptions autocast_now(c10::DeviceType device) {
  amp::AutocastOptions options;
  options.device = device;
  options.enabled = amp::is_autocast_enabled(device);
  options.dtype = amp::autocast_dtype(device);
  options.cache_enabled = at::autocast::is_autocast_cache_enabled();
  return options;
}

}  // namespace

ForwardState ForwardState::capture(const at::Tensor& input, bool rng) {
  ForwardState state;
  if (rng) {
    state.cpu_rng = get_state(generator_of(c10::DeviceType::CPU, -1));
    if (input.defined() && input.is_cuda()) {
      state.cuda_device = input.device().index();
      state.cuda_rng = get_state(generator_of(c10::DeviceType::CUDA, state.cuda_device));
    }
  }
  state.cpu_autocast = autocast_now(c10::DeviceType::CPU);
  state.cuda_autocast = autocast_now(c10::DeviceType::CUDA);
  return state;
}

ReplayGuard::ReplayGuard(const ForwardState& state) : cuda_device_(state.cuda_device) {
  if (state.cpu_rng) {
    auto gen = generator_of(c10::DeviceType::CPU, -1);
    saved_cpu_rng_ = get_state(gen);
    set_state(gen, *state.cpu_rng);
  }
  if (state.cuda_rng) {
    auto gen = generator_of(c10::DeviceType::CUDA, cuda_device_);
    saved_cuda_rng_ = get_state(gen);
    set_state(gen, *state.cuda_rng);
  }
  cpu_autocast_.emplace(state.cpu_autocast);
  cuda_autocast_.emplace(state.cuda_autocast);
}

ReplayGuard::~ReplayGuard() {
  cuda_autocast_.reset();
  cpu_autocast_.reset();
  if (saved_cuda_rng_) set_state(generator_of(c10::DeviceType::CUDA, cuda_device_), *saved_cuda_rng_);
  if (saved_cpu_rng_) set_state(generator_of(c10::DeviceType::CPU, -1), *saved_cpu_rng_);
}

}  // namespace paisoar::memory::detail
