// What this node has for `--nproc-per-node auto|cpu|gpu` (torchrun's
// values): the CPUs the launcher may run on and the NVIDIA GPUs visible to
// its ranks, read once at the launcher's start (read_node_devices), so the
// rule that turns them into a rank count (resolve_nproc_per_node) is pure.
// Counting GPUs needs no LibTorch and no CUDA: CUDA_VISIBLE_DEVICES when it
// is set, else the GPUs the NVIDIA driver lists in /proc/driver/nvidia/gpus.
#pragma once

#include <optional>
#include <string>

namespace paisoar::launch {

struct NodeDevices {
  // CPUs in the launcher's affinity mask, at least 1.
  int cpus = 1;
  // NVIDIA GPUs the ranks can see.
  int gpus = 0;
};

// Reads this machine's (the launcher's environment for CUDA_VISIBLE_DEVICES).
NodeDevices read_node_devices();

// GPUs named by a CUDA_VISIBLE_DEVICES value: its comma-separated entries
// up to the first that is empty or "-1" (CUDA ignores those and the rest).
int gpus_in_visible_devices(const std::string& value);

// The number of ranks for an --nproc-per-node value: a number from 1 to
// kMaxRanksPerNode as it is; "cpu": devices.cpus; "gpu": devices.gpus;
// "auto": the GPUs if there are any, else the CPUs (as torchrun).
// std::nullopt with `*why` set when the value is not one of these, "gpu"
// finds no GPU, or the count is above kMaxRanksPerNode.
std::optional<int> resolve_nproc_per_node(const std::string& value, const NodeDevices& devices,
                                          std::string* why);

}  // namespace paisoar::launch
