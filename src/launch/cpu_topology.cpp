// read_cpu_topology(), parse_cpu_list() and cpu_list_text().
#include "launch/cpu_topology.h"

#include <dirent.h>
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace paisoar::launch {
namespace {

// The first line of `path`, "" when it cannot be read.
std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

int int_file(const std::string& path, int fallback) {
  const std::string text = first_line(path);
  try {
    return text.empty() ? fallback : std::stoi(text);
  } catch (const std::exception&) {
    return fallback;
  }
}

std::vector<int> own_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> ids;
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return ids;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (CPU_ISSET(i, &set)) ids.push_back(i);
  }
  return ids;
}

// NUMA node of each CPU from /sys/devices/system/node/node*/cpulist.
std::map<int, int> numa_of_cpus(const std::string& sys_root) {
  std::map<int, int> numa;
  const std::string dir = sys_root + "/devices/system/node";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return numa;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("node", 0) != 0 || name.size() == 4 ||
        !std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    try {
      for (int cpu : parse_cpu_list(first_line(dir + "/" + name + "/cpulist"))) numa[cpu] = std::stoi(name.substr(4));
    } catch (const std::invalid_argument&) {
    }
  }
  ::closedir(d);
  return numa;
}

// The tightest cpu.max quota along this process's cgroup v2 path, in CPUs
// rounded up; 0 when none is set (or cgroup v1).
int cgroup_quota_cpus(const std::string& sys_root, const std::string& proc_root) {
  std::ifstream in(proc_root + "/self/cgroup");
  std::string line, path;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  }
  if (path.empty()) return 0;
  double tightest = 0;
  while (true) {
    std::istringstream max(first_line(sys_root + "/fs/cgroup" + (path == "/" ? "" : path) + "/cpu.max"));
    std::string quota;
    double period = 0;
    if (max >> quota >> period && quota != "max" && period > 0) {
      try {
        const double cpus = std::stod(quota) / period;
        if (cpus > 0 && (tightest == 0 || cpus < tightest)) tightest = cpus;
      } catch (const std::exception&) {
      }
    }
    if (path == "/" || path.empty()) break;
    const auto slash = path.rfind('/');
    path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }
  return tightest == 0 ? 0 : std::max(1, static_cast<int>(std::ceil(tightest - 1e-9)));
}

}  // namespace

CpuTopology read_cpu_topology(const std::string& sys_root, const std::string& proc_root, std::vector<int> allowed) {
  if (allowed.empty()) allowed = own_affinity();
  const std::map<int, int> numa = numa_of_cpus(sys_root);
  CpuTopology t;
  for (int id : allowed) {
    const std::string topo = sys_root + "/devices/system/cpu/cpu" + std::to_string(id) + "/topology/";
    LogicalCpu cpu;
    cpu.id = id;
    // Without its files a CPU is a core of its own: ids above any real core id.
    cpu.core = int_file(topo + "core_id", 1000000 + id);
    cpu.package = int_file(topo + "physical_package_id", 0);
    const auto n = numa.find(id);
    cpu.numa = n == numa.end() ? 0 : n->second;
    t.cpus.push_back(cpu);
  }
  t.quota_cpus = cgroup_quota_cpus(sys_root, proc_root);
  return t;
}

}  // namespace paisoar::launch
