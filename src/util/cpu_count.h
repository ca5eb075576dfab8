// The cores this process may run on (its CPU affinity), at least 1: what
// the launcher divides among ranks, the shared-memory transport's waits and
// the planner's contention model all count.
#pragma once

#include <sched.h>

#include <algorithm>
#include <thread>

namespace paisoar::util {

inline int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace paisoar::util
