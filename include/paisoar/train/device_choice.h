// The device a run trains on: the config's `device` (auto, cpu, cuda)
// resolved for this rank, with the errors a user needs when CUDA is asked for
// and cannot be had.
#pragma once

#include <torch/types.h>

#include <string>

namespace paisoar::train {

// auto: cuda:<local_rank % devices> when a CUDA device is visible, else cpu.
// cpu: the CPU. cuda: cuda:<local_rank % devices>; throws ConfigError naming
// `device` when this paisoar is a CPU build (what to install) or no CUDA
// device is visible (what to check or set).
torch::Device resolve_device(const std::string& device, int local_rank);

}  // namespace paisoar::train
