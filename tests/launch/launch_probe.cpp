// A rank program for the launcher tests, driven by argv: each token is an
// action run in order, e.g. `launch_probe pid env RANK if-rank 1 exit 3 sleep 60`.
// Actions: pid | env NAME | print TEXT | partial TEXT | lines N | exit CODE |
//   raise SIGNO | sleep SECONDS | ignore-term | grandchild PIDFILE |
//   daemon PIDFILE (a grandchild that leaves the process group with setsid) |
//   pidfile PATH (write own pid there) | wait-file PATH (until it exists, 30 s max) |
//   error-file TEXT (write {"message": {"message": TEXT}} to $TORCHELASTIC_ERROR_FILE,
//   as torch's @record does; TEXT must need no JSON escaping) |
//   signals (print IGNORED=... and BLOCKED=..., the signal numbers not at their
//   default action and those blocked, "none" for none) |
//   trap SIGNO (a handler that prints "CAUGHT SIGNO" and exits with 40, as a
//   program's graceful shutdown would; installed only when SIGNO is at its
//   default action, as CPython installs its KeyboardInterrupt handler only
//   when SIGINT is: an inherited SIG_IGN stays).
// Conditions, applying to the next action only: if-rank R | if-restart N.
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v == nullptr ? fallback : v;
}

void sleep_seconds(double seconds) {
  timespec left{static_cast<time_t>(seconds),
                static_cast<long>((seconds - static_cast<time_t>(seconds)) * 1e9)};
  while (nanosleep(&left, &left) != 0) {
  }
}

// Writes `pid` to `path` atomically (temp file + rename).
void write_pid_file(const std::string& path, pid_t pid) {
  std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) std::exit(90);
  std::fprintf(f, "%d\n", static_cast<int>(pid));
  std::fclose(f);
  std::rename(tmp.c_str(), path.c_str());
}

// "2,15" or "none".
std::string numbers_or_none(const std::string& list) { return list.empty() ? "none" : list; }

void print_signal_state() {
  std::string ignored, handled, blocked;
  sigset_t mask;
  sigprocmask(SIG_BLOCK, nullptr, &mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction action {};
    if (sigaction(sig, nullptr, &action) != 0) continue;  // glibc's internal signals
    std::string* list = action.sa_handler == SIG_IGN   ? &ignored
                        : action.sa_handler != SIG_DFL ? &handled
                                                       : nullptr;
    if (list != nullptr) *list += (list->empty() ? "" : ",") + std::to_string(sig);
    if (sigismember(&mask, sig) == 1) blocked += (blocked.empty() ? "" : ",") + std::to_string(sig);
  }
  std::printf("IGNORED=%s\nHANDLED=%s\nBLOCKED=%s\n", numbers_or_none(ignored).c_str(),
              numbers_or_none(handled).c_str(), numbers_or_none(blocked).c_str());
}

void graceful_exit(int sig) {
  char text[32];
  const int n = std::snprintf(text, sizeof(text), "CAUGHT %d\n", sig);
  if (write(STDOUT_FILENO, text, static_cast<std::size_t>(n)) < 0) _exit(41);
  _exit(40);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string rank = env_or("RANK", "?");
  const std::string restart = env_or("PAISOAR_RESTART_COUNT", "?");
  bool skip_next = false;
  for (int i = 1; i < argc; ++i) {
    const std::string action = argv[i];
    const char* arg = i + 1 < argc ? argv[i + 1] : "";
    if (action == "if-rank" || action == "if-restart") {
      const std::string& actual = action == "if-rank" ? rank : restart;
      skip_next = skip_next || actual != arg;
      ++i;
      continue;
    }
    const bool skip = skip_next;
    skip_next = false;
    if (action == "pid") {
      if (!skip) std::printf("PID=%d\n", static_cast<int>(getpid()));
    } else if (action == "ignore-term") {
      if (!skip) signal(SIGTERM, SIG_IGN);
    } else if (action == "signals") {
      if (!skip) print_signal_state();
    } else if (action == "trap") {
      struct sigaction now {};
      if (!skip && sigaction(std::atoi(arg), nullptr, &now) == 0 && now.sa_handler == SIG_DFL)
        signal(std::atoi(arg), graceful_exit);
      ++i;
    } else if (action == "env") {
      if (!skip) std::printf("%s=%s\n", arg, env_or(arg, "<unset>").c_str());
      ++i;
    } else if (action == "print") {
      if (!skip) std::printf("%s\n", arg);
      ++i;
    } else if (action == "partial") {
      if (!skip) std::printf("%s", arg);
      ++i;
    } else if (action == "lines") {
      // Many lines quickly through full stdio buffers: the pipe reads end
      // mid-line, which the launcher must reassemble.
      for (int n = skip ? 0 : std::atoi(arg), k = 0; k < n; ++k) {
        std::printf("out rank=%s line=%d abcdefghijklmnopqrstuvwxyz0123456789\n", rank.c_str(), k);
        std::fprintf(stderr, "err rank=%s line=%d ABCDEFGHIJKLMNOPQRSTUVWXYZ\n", rank.c_str(), k);
      }
      ++i;
    } else if (action == "exit") {
      std::fflush(nullptr);
      if (!skip) std::exit(std::atoi(arg));
      ++i;
    } else if (action == "raise") {
      std::fflush(nullptr);
      if (!skip) raise(std::atoi(arg));
      ++i;
    } else if (action == "sleep") {
      std::fflush(nullptr);
      if (!skip) sleep_seconds(std::atof(arg));
      ++i;
    } else if (action == "pidfile") {
      if (!skip) write_pid_file(arg, getpid());
      ++i;
    } else if (action == "error-file") {
      const char* path = std::getenv("TORCHELASTIC_ERROR_FILE");
      if (!skip && path != nullptr) {
        std::FILE* f = std::fopen(path, "w");
        if (f == nullptr) std::exit(91);
        std::fprintf(f, "{\"message\": {\"message\": \"%s\", \"extraInfo\": {}}}", arg);
        std::fclose(f);
      }
      ++i;
    } else if (action == "wait-file") {
      for (int tries = 0; !skip && tries < 3000 && access(arg, F_OK) != 0; ++tries) {
        sleep_seconds(0.01);
      }
      ++i;
    } else if (action == "grandchild" || action == "daemon") {
      if (!skip) {
        std::fflush(nullptr);
        pid_t child = fork();
        if (child == 0) {  // holds the rank's pipes; a daemon also leaves its group
          if (action == "daemon") setsid();
          write_pid_file(arg, getpid());
          sleep_seconds(60);
          _exit(0);
        }
        while (access(arg, F_OK) != 0) sleep_seconds(0.005);  // the child is set up
      }
      ++i;
    } else {
      std::fprintf(stderr, "launch_probe: unknown action '%s'\n", action.c_str());
      return 99;
    }
    std::fflush(nullptr);
  }
  return 0;
}
