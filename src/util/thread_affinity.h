// ScopedThreadAffinity: runs the calling thread on given CPUs while it lives
// (threads and processes it starts meanwhile inherit that mask), then gives
// the thread its own mask back. The launcher binds a rank this way while it
// spawns it; the planner, inside a rank bound to its own cores, measures on
// the CPUs the node's ranks share.
#pragma once

#include <sched.h>

#include <cerrno>
#include <vector>

namespace paisoar::util {

class ScopedThreadAffinity {
 public:
  // Nothing when `cpus` is empty. error() is the errno when the mask could
  // not be set (the thread then keeps its own).
  explicit ScopedThreadAffinity(const std::vector<int>& cpus) {
    if (cpus.empty()) return;
    if (::sched_getaffinity(0, sizeof(saved_), &saved_) != 0) {
      error_ = errno;
      return;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int id : cpus) {
      if (id >= 0 && id < CPU_SETSIZE) CPU_SET(id, &set);
    }
    if (::sched_setaffinity(0, sizeof(set), &set) != 0) {
      error_ = errno;
      return;
    }
    active_ = true;
  }
  ~ScopedThreadAffinity() {
    if (active_) ::sched_setaffinity(0, sizeof(saved_), &saved_);
  }
  ScopedThreadAffinity(const ScopedThreadAffinity&) = delete;
  ScopedThreadAffinity& operator=(const ScopedThreadAffinity&) = delete;

  int error() const { return error_; }

 private:
  cpu_set_t saved_{};
  bool active_ = false;
  int error_ = 0;
};

}  // namespace paisoar::util
