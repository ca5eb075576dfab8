// read_node_devices() and resolve_nproc_per_node().
#include "launch/node_devices.h"

#include <dirent.h>

#include <cctype>
#include <cstdlib>

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
  if (value == "cpu") return devices.cpus;
  if (value == "auto") return devices.gpus > 0 ? devices.gpus : devices.cpus;
  if (value == "gpu") {
    if (devices.gpus > 0) return devices.gpus;
    *why = "'gpu' found no NVIDIA GPU (CUDA_VISIBLE_DEVICES, else /proc/driver/nvidia/gpus); "
           "give a number of ranks, or 'cpu'";
    return std::nullopt;
  }
  bool digits = !value.empty() && value.size() <= 6;
  for (char c : value) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  if (!digits) {
    *why = "'" + value + "' is not a number of ranks, 'auto', 'cpu' or 'gpu'" +
           (value == "xpu" ? " (Intel XPUs are not counted by paisoar launch; give a number)" : "");
    return std::nullopt;
  }
  const int n = std::atoi(value.c_str());
  if (n < 1) {
    *why = "must be at least 1, got " + value;
    return std::nullopt;
  }
  return n;
}

}  // namespace paisoar::launch
