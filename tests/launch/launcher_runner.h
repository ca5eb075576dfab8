// Test helper: runs the built `paisoar` binary as a child process with
// captured stdout/stderr, lets a test signal it while it runs, and collects
// the exit status. Also small parsers for the probe's output.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "launch/unique_fd.h"

namespace paisoar::launch::testing {

struct RunResult {
  int exit_code = -1;  // -1 when the process was killed by a signal
  int term_signal = 0;
  std::string out;
  std::string err;
};

// The signal state a launcher starts with, as a shell or nohup leaves it;
// every other signal is at its default action and unblocked.
struct InheritedSignals {
  std::vector<int> ignored;
  std::vector<int> blocked;
};

// A running `paisoar` process. The destructor SIGKILLs and reaps it if the
// test did not finish() it, so a failing test leaves nothing behind.
class LauncherRun {
 public:
  // Runs `binary args...` with the test's environment plus `env` entries
  // ("NAME=value" sets, "NAME" alone unsets), starting with `signals`.
  LauncherRun(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
              const std::string& binary = PAISOAR_BIN, const InheritedSignals& signals = {});
  ~LauncherRun();
  LauncherRun(const LauncherRun&) = delete;
  LauncherRun& operator=(const LauncherRun&) = delete;

  pid_t pid() const { return pid_; }

  // Reads output until `needle` occurs `count` times in stdout; false after
  // `timeout_s` seconds or when the output ends first.
  bool wait_for_stdout(const std::string& needle, int count, double timeout_s);

  // Reads all output and waits for the exit, SIGKILLing the process after
  // `timeout_s` seconds (the test's hang guard: generous, since two Python
  // ranks importing torch on a loaded 2-core machine took over 50 s).
  RunResult finish(double timeout_s = 150);

 private:
  bool read_some(int timeout_ms);  // false once both pipes are closed

  pid_t pid_ = -1;
  bool reaped_ = false;
  UniqueFd out_fd_;
  UniqueFd err_fd_;
  RunResult result_;
};

// Runs `paisoar args...` to completion.
RunResult run_paisoar(const std::vector<std::string>& args,
                      const std::vector<std::string>& env = {});

// The arguments of `paisoar launch <flags...> launch_probe <actions...>`.
// Without a --master_port (or --standalone, --rdzv-endpoint) in `flags`, "--master_port 0" is
// added: the launcher binds its rendezvous store's port, and tests running in
// parallel must not all ask for the default 29500.
std::vector<std::string> probe_launch(const std::vector<std::string>& flags,
                                      const std::vector<std::string>& actions);

// Lines of `text`, without the '\n'.
std::vector<std::string> lines_of(const std::string& text);

// NAME=value lines of the probe, by rank: "[rank3]: RANK=3" -> values[3]["RANK"] = "3".
std::map<int, std::map<std::string, std::string>> values_by_rank(const std::string& out);

// True when `pid` exists and is not a zombie.
bool process_alive(pid_t pid);

// Waits up to `timeout_s` for `pid` to be gone; true when it is.
bool wait_until_dead(pid_t pid, double timeout_s);

// The child of `parent` (a launcher) whose environment has RANK=<rank>; -1 if none.
pid_t child_with_rank(pid_t parent, int rank);

// A fresh empty directory under the system temp dir.
std::string make_temp_dir();

// Reads a pid written by the probe's `grandchild` action; -1 if absent.
pid_t read_pid_file(const std::string& path, double timeout_s);

}  // namespace paisoar::launch::testing
