// SignalChannel: blocks the launcher's signals and reads them via signalfd.
#include "launch/signal_channel.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace paisoar::launch {
namespace {

bool ignored_now(int sig) {
  struct sigaction action {};
  return sigaction(sig, nullptr, &action) == 0 && action.sa_handler == SIG_IGN;
}

// A blocked signal is queued for the signalfd even when its action is
// SIG_IGN, so leaving SIGHUP out is what keeps nohup's choice.
sigset_t handled_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (!ignored_now(SIGHUP)) sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

SignalChannel::SignalChannel() {
  sigset_t set = handled_signals();
  if (sigprocmask(SIG_BLOCK, &set, &old_mask_) != 0)
    throw std::runtime_error(std::string("paisoar launch: sigprocmask: ") + std::strerror(errno));
  int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    throw std::runtime_error(std::string("paisoar launch: signalfd: ") + std::strerror(err));
  }
  fd_.reset(fd);
  struct sigaction action {};
  sigemptyset(&action.sa_mask);
  action.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &action, &old_sigpipe_);
  // An ignored SIGCHLD would make the kernel reap the ranks behind our back.
  action.sa_handler = SIG_DFL;
  sigaction(SIGCHLD, &action, &old_sigchld_);
}

SignalChannel::~SignalChannel() {
  fd_.reset();
  sigaction(SIGCHLD, &old_sigchld_, nullptr);
  sigaction(SIGPIPE, &old_sigpipe_, nullptr);
  sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
}

std::vector<int> SignalChannel::drain() {
  std::vector<int> signals;
  signalfd_siginfo info;
  for (;;) {
    ssize_t n = ::read(fd_.get(), &info, sizeof(info));
    if (n == static_cast<ssize_t>(sizeof(info))) {
      signals.push_back(static_cast<int>(info.ssi_signo));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return signals;  // EAGAIN: nothing more pending
  }
}

}  // namespace paisoar::launch
