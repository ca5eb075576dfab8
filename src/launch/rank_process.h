// Starting one rank as a child process (posix_spawn, its own process group,
// stdout/stderr into pipes) and describing how it ended.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "launch/unique_fd.h"

namespace paisoar::launch {

// A rank that could not be started (program missing, not executable, ...).
// what() is e.g. "cannot start './train': No such file or directory".
class SpawnError : public std::runtime_error {
 public:
  SpawnError(const std::string& message, int error_code)
      : std::runtime_error(message), error_code_(error_code) {}
  // The errno from posix_spawn, e.g. ENOENT.
  int error_code() const { return error_code_; }

 private:
  int error_code_;
};

// A started rank. The process leads its own process group (pgid == pid), so
// signal_group() reaches whatever it spawned too.
struct RankProcess {
  pid_t pid = -1;
  UniqueFd stdout_fd;  // read end of the rank's stdout, non-blocking
  UniqueFd stderr_fd;  // read end of the rank's stderr, non-blocking
};

// Starts argv[0] (searched in PATH when it has no '/') with exactly `env`.
// The child reads /dev/null as stdin, writes stdout/stderr into new pipes,
// and starts as torchrun's ranks do, whatever the launcher inherited (a
// signal ignored by `cmd &` in a script or by nohup, a blocked one): every
// signal at its default action and none blocked, so that a forwarded SIGINT
// or SIGTERM reaches the program's own handlers. With `cpus`, the child's
// CPU affinity is those CPUs (core_placement.h); else the launcher's. Throws
// SpawnError when it cannot be started.
RankProcess spawn_rank(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       const std::vector<int>& cpus = {});

// Sends `sig` to the process group `pgid`. When no such group exists and
// `leader_unreaped` (the rank `pgid` has not been waited for, so its pid
// cannot have been reused), sends it to that process instead: a rank that
// moved itself to another group. Returns false when nothing got the signal.
bool signal_group(pid_t pgid, int sig, bool leader_unreaped);

// How a rank ended, from waitpid()'s status.
struct ExitStatus {
  int code = 0;    // exit code when the rank exited
  int signal = 0;  // the signal that killed it, else 0

  static ExitStatus from_wait_status(int status);
  bool success() const { return signal == 0 && code == 0; }
  // "exited with code 3" or "was killed by signal 9 (SIGKILL)".
  std::string describe() const;
};

// "SIGKILL" for 9; "signal 77" style text for numbers without a name.
std::string signal_name(int sig);

}  // namespace paisoar::launch
