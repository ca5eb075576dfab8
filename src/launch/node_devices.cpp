// read_node_devices() and resolve_nproc_per_node().
#include "launch/node_devices.h"

#include <dirent.h>

#include <cctype>
#include <cstdlib>

#include "launch/flag_values.h"
#include "launch/rank_env.h"

namespace paisoar::launch {
namespace {

int gpus_listed_by_the_driver() {
  DIR* dir = ::opendir("/proc/driver/nvidia/gpus");
  if (dir == nullptr) return 0;
  int n = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') ++n;  // one directory per GPU, named by its PCI address
  }
  ::closedir(dir);
  return n;
}

}  // namespace

int gpus_in_visible_devices(const std::string& value) {
  int n = 0;
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t comma = value.find(',', start);
    std::string item = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.pop_back();
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) item.erase(0, 1);
    if (item.empty() || item == "-1") break;
    ++n;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return n;
}

NodeDevices read_node_devices() {
  NodeDevices d;
  d.cpus = available_cpus();
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  d.gpus = visible != nullptr ? gpus_in_visible_devices(visible) : gpus_listed_by_the_driver();
  return d;
}

std::optional<int> resolve_nproc_per_node(const std::string& value, const NodeDevices& devices,
                                          std::string* why) {
  int n = 0;
  if (value == "cpu") {
    n = devices.cpus;
  } else if (value == "auto") {
    n = devices.gpus > 0 ? devices.gpus : devices.cpus;
  } else if (value == "gpu") {
    if (devices.gpus == 0) {
      *why = "'gpu' found no NVIDIA GPU (CUDA_VISIBLE_DEVICES, else /proc/driver/nvidia/gpus); "
             "give a number of ranks, or 'cpu'";
      return std::nullopt;
    }
    n = devices.gpus;
  } else {
    try {
      return parse_int_in(value, 1, kMaxRanksPerNode);
    } catch (const std::invalid_argument&) {
      *why = "must be a whole number from 1 to " + std::to_string(kMaxRanksPerNode) +
             ", or auto, cpu or gpu, got '" + value + "'" +
             (value == "xpu" ? " (Intel XPUs are not counted by paisoar launch; give a number)" : "");
      return std::nullopt;
    }
  }
  if (n > kMaxRanksPerNode) {
    *why = value + " gives " + std::to_string(n) + " ranks, more than the " +
           std::to_string(kMaxRanksPerNode) + " a node may run; give a number";
    return std::nullopt;
  }
  return n;
}

}  // namespace paisoar::launch
