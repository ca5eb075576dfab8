// spawn_rank(), signal_group() and ExitStatus: the OS side of one rank.
#include "launch/rank_process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "launch/cpu_topology.h"
#include "util/thread_affinity.h"

namespace paisoar::launch {
namespace {

struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw SpawnError(std::string("cannot create a pipe: ") + strerror(errno),
                     errno);
  Pipe p{UniqueFd(fds[0]), UniqueFd(fds[1])};
  ::fcntl(p.read_end.get(), F_SETFL, ::fcntl(p.read_end.get(), F_GETFL) | O_NONBLOCK);
  return p;
}

// posix_spawn's attribute and file-action objects, destroyed on scope exit.
struct SpawnSetup {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  SpawnSetup() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

RankProcess spawn_rank(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       const std::vector<int>& cpus) {
  Pipe out = make_pipe();
  Pipe err = make_pipe();

  SpawnSetup setup;
  sigset_t empty;
  sigemptyset(&empty);
  sigset_t every;  // glibc leaves out its own internal signals
  sigfillset(&every);
  posix_spawnattr_setflags(&setup.attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&setup.attr, 0);  // a new group led by the rank
  posix_spawnattr_setsigmask(&setup.attr, &empty);
  posix_spawnattr_setsigdefault(&setup.attr, &every);  // SIGKILL and SIGSTOP are left as they are
  posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&setup.actions, out.write_end.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&setup.actions, err.write_end.get(), STDERR_FILENO);

  std::vector<char*> c_argv = c_strings(argv);
  std::vector<char*> c_env = c_strings(env);
  pid_t pid = -1;
  const util::ScopedThreadAffinity bound(cpus);  // the child inherits this thread's mask
  if (bound.error() != 0)
    throw SpawnError(std::string("cannot bind a rank to CPUs ") + cpu_list_text(cpus) + ": " +
                         strerror(bound.error()) + " (start the launcher with --bind_to none)",
                     bound.error());
  int rc = posix_spawnp(&pid, c_argv[0], &setup.actions, &setup.attr, c_argv.data(), c_env.data());
  if (rc != 0) {
    throw SpawnError("cannot start '" + argv[0] + "': " + strerror(rc), rc);
  }
  RankProcess rank;
  rank.pid = pid;
  rank.stdout_fd = std::move(out.read_end);
  rank.stderr_fd = std::move(err.read_end);
  return rank;  // the write ends close here; only the rank holds them now
}

bool signal_group(pid_t pgid, int sig, bool leader_unreaped) {
  if (::kill(-pgid, sig) == 0) return true;
  return leader_unreaped && ::kill(pgid, sig) == 0;
}

ExitStatus ExitStatus::from_wait_status(int status) {
  ExitStatus s;
  if (WIFEXITED(status)) {
    s.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    s.signal = WTERMSIG(status);
  }
  return s;
}

std::string ExitStatus::describe() const {
  if (signal != 0)
    return "was killed by signal " + std::to_string(signal) + " (" + signal_name(signal) + ")";
  return "exited with code " + std::to_string(code);
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev == nullptr) return "signal " + std::to_string(sig);
  return std::string("SIG") + abbrev;
}

}  // namespace paisoar::launch
