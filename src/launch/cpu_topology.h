// What the launcher may run its ranks on: the logical CPUs of its affinity
// mask (which a cgroup's cpuset already narrows), each with the physical core,
// package and NUMA node it belongs to, and the cgroup's CPU quota. Read once
// from sysfs and procfs (read_cpu_topology) so that the placement of ranks on
// cores (core_placement.h) is a pure function of it.
#pragma once

#include <string>
#include <vector>

#include "util/cpu_list.h"

namespace paisoar::launch {

struct LogicalCpu {
  int id = 0;       // the kernel's CPU number (what sched_setaffinity takes)
  int core = 0;     // physical core id, unique within its package
  int package = 0;  // socket
  int numa = 0;     // NUMA node; 0 when the kernel lists none
};

struct CpuTopology {
  // The CPUs of the launcher's affinity mask, by id.
  std::vector<LogicalCpu> cpus;
  // The cgroup's CPU quota in whole CPUs (cpu.max, the tightest along the
  // cgroup's path, rounded up); 0 when there is none.
  int quota_cpus = 0;
};

// Reads this machine's. `sys_root` and `proc_root` are "/sys" and "/proc"
// except in tests; `allowed` the CPU ids of the affinity mask (empty: this
// process's own). A CPU whose topology files are missing counts as a core of
// its own on package 0, NUMA node 0.
CpuTopology read_cpu_topology(const std::string& sys_root = "/sys", const std::string& proc_root = "/proc",
                              std::vector<int> allowed = {});

// The kernel's CPU list text, read and written here as by the library.
using util::cpu_list_text;
using util::parse_cpu_list;

}  // namespace paisoar::launch
