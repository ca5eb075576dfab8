// resolve_device: `device: auto|cpu|cuda` to a torch::Device for this rank.
#include "paisoar/train/device_choice.h"

#include <torch/cuda.h>

#include "paisoar/train/train_config.h"
#include "paisoar/version.h"

namespace paisoar::train {

torch::Device resolve_device(const std::string& device, int local_rank) {
  if (device == "cpu") return torch::kCPU;
  const int64_t count = PAISOAR_BUILT_WITH_CUDA ? static_cast<int64_t>(torch::cuda::device_count()) : 0;
  if (device == "auto") {
    return count > 0 ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank % count))
                     : torch::Device(torch::kCPU);
  }
  if (device != "cuda") {
    throw ConfigError("device: '" + device + "' is not one of: auto, cpu, cuda");
  }
  if (!PAISOAR_BUILT_WITH_CUDA) {
    throw ConfigError(
        "device: cuda, but this paisoar is a CPU build (LibTorch " PAISOAR_TORCH_VERSION
        " without CUDA): install a CUDA torch wheel (scripts/setup.sh pins one), rebuild, or "
        "set device: cpu");
  }
  if (count == 0) {
    throw ConfigError(
        "device: cuda, but no CUDA device is visible to this process (check nvidia-smi, the "
        "NVIDIA driver and CUDA_VISIBLE_DEVICES), or set device: cpu (device: auto picks the "
        "CPU when there is no GPU)");
  }
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank % count));
}

}  // namespace paisoar::train
