// Delivers SIGCHLD, SIGINT, SIGTERM and SIGHUP to the launcher as readable
// events on a signalfd, so the supervisor's single poll() loop sees them
// alongside the ranks' pipes. Also makes SIGPIPE ignored, so writing to a
// closed stdout fails with EPIPE instead of killing the launcher.
// SIGINT and SIGTERM are acted on even when the launcher was started with
// them ignored (a shell script's `cmd &` ignores SIGINT without being asked),
// as torchrun does. A SIGHUP ignored at the start (nohup) stays ignored by the
// launcher, so a closed terminal does not end the job; torchrun stops its
// ranks then. The ranks start with every signal at its default action either
// way (spawn_rank).
#pragma once

#include <signal.h>

#include <vector>

#include "launch/unique_fd.h"

namespace paisoar::launch {

// While alive, the signals it handles are blocked for the process and
// readable from fd(); the destructor restores the previous mask and the
// previous SIGPIPE and SIGCHLD actions.
// REQUIRES: the process is single-threaded (the mask is per thread), and at
// most one SignalChannel exists at a time. Keep it for the whole launcher
// run, so a Ctrl-C between two attempts is not lost.
class SignalChannel {
 public:
  SignalChannel();
  ~SignalChannel();
  SignalChannel(const SignalChannel&) = delete;
  SignalChannel& operator=(const SignalChannel&) = delete;

  // Readable when a signal is pending; for poll(), never read directly.
  int fd() const { return fd_.get(); }

  // Returns the signals pending now, oldest first, without blocking. Several
  // children exiting together may show up as one SIGCHLD.
  std::vector<int> drain();

 private:
  UniqueFd fd_;
  sigset_t old_mask_;
  struct sigaction old_sigpipe_;
  struct sigaction old_sigchld_;
};

}  // namespace paisoar::launch
