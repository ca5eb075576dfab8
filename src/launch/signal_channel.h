// Delivers SIGCHLD, SIGINT, SIGTERM and SIGHUP to the launcher as readable
// events on a signalfd, so the supervisor's single poll() loop sees them
// alongside the ranks' pipes. Also makes SIGPIPE ignored, so writing to a
// closed stdout fails with EPIPE instead of killing the launcher. A SIGINT,
// SIGTERM or SIGHUP the launcher was started with ignored (nohup, background
// jobs of a script) stays ignored, for the launcher and for the ranks.
#pragma once

#include <signal.h>

#include <vector>

#include "launch/unique_fd.h"

namespace paisoar::launch {

// While alive, the four signals are blocked for the process and readable
// from fd(); the destructor restores the previous mask and the previous
// SIGPIPE and SIGCHLD actions.
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

  // The signals whose action this object changed: a rank must start with
  // them back at their default action (the ranks' signal mask is cleared
  // separately).
  const sigset_t& signals_to_reset_in_child() const { return changed_; }

 private:
  UniqueFd fd_;
  sigset_t old_mask_;
  sigset_t changed_;
  struct sigaction old_sigpipe_;
  struct sigaction old_sigchld_;
};

}  // namespace paisoar::launch
