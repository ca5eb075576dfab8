// Heartbeat: a rank's sign of progress for `paisoar launch --heartbeat_timeout`.
// The launcher names a file (PAISOAR_HEARTBEAT_FILE, read at the edge into
// train::RunEnvironment); beat() sets its time to now (creating it the first
// time), and the launcher's watchdog stops the group when a rank's file grows
// older than the timeout. Inert with an empty path. Plain POSIX, no LibTorch.
#pragma once

#include <string>

namespace paisoar::util {

// One per rank; not thread-safe (call beat() from the training loop).
class Heartbeat {
 public:
  explicit Heartbeat(std::string path = "");
  // One utimensat(2); failures are ignored (a missing beat only risks a restart).
  void beat();
  bool active() const { return !path_.empty(); }

 private:
  std::string path_;
};

}  // namespace paisoar::util
