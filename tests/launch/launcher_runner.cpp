// LauncherRun and the parsing helpers of the launcher tests.
#include "launcher_runner.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace paisoar::launch::testing {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<std::string> child_environment(const std::vector<std::string>& changes) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  for (const std::string& change : changes) {
    std::string name = change.substr(0, change.find('='));
    for (auto it = env.begin(); it != env.end();) {
      it = it->compare(0, name.size() + 1, name + "=") == 0 ? env.erase(it) : it + 1;
    }
    if (change.find('=') != std::string::npos) env.push_back(change);
  }
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

LauncherRun::LauncherRun(const std::vector<std::string>& args,
                         const std::vector<std::string>& env, const std::string& binary,
                         const InheritedSignals& signals) {
  std::vector<std::string> argv = {binary};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> envv = child_environment(env);
  std::vector<char*> c_argv = c_strings(argv);
  std::vector<char*> c_env = c_strings(envv);
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe2 failed");
  pid_ = fork();
  if (pid_ == 0) {
    // Start the launcher with default signal handling, whatever ctest got,
    // but for what the test asks.
    for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);  // fails harmlessly for some
    for (int sig : signals.ignored) signal(sig, SIG_IGN);
    sigset_t mask;
    sigemptyset(&mask);
    for (int sig : signals.blocked) sigaddset(&mask, sig);
    sigprocmask(SIG_SETMASK, &mask, nullptr);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    execve(c_argv[0], c_argv.data(), c_env.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  out_fd_.reset(out[0]);
  err_fd_.reset(err[0]);
}

LauncherRun::~LauncherRun() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool LauncherRun::read_some(int timeout_ms) {
  pollfd fds[2] = {{out_fd_.get(), POLLIN, 0}, {err_fd_.get(), POLLIN, 0}};
  if (!out_fd_ && !err_fd_) return false;
  if (poll(fds, 2, timeout_ms) <= 0) return true;
  char buf[65536];
  UniqueFd* owners[2] = {&out_fd_, &err_fd_};
  std::string* sinks[2] = {&result_.out, &result_.err};
  for (int i = 0; i < 2; ++i) {
    if (fds[i].revents == 0) continue;
    ssize_t n = read(owners[i]->get(), buf, sizeof(buf));
    if (n > 0) {
      sinks[i]->append(buf, static_cast<std::size_t>(n));
    } else if (!(n < 0 && errno == EINTR)) {
      owners[i]->reset();
    }
  }
  return true;
}

bool LauncherRun::wait_for_stdout(const std::string& needle, int count, double timeout_s) {
  auto start = Clock::now();
  for (;;) {
    int found = 0;
    for (std::size_t at = result_.out.find(needle); at != std::string::npos;
         at = result_.out.find(needle, at + 1)) {
      ++found;
    }
    if (found >= count) return true;
    if (seconds_since(start) > timeout_s || !read_some(100)) return false;
  }
}

RunResult LauncherRun::finish(double timeout_s) {
  auto start = Clock::now();
  while (read_some(100)) {
    if (seconds_since(start) > timeout_s) {
      kill(pid_, SIGKILL);  // hang guard: the test fails on the exit status
      break;
    }
  }
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (seconds_since(start) > timeout_s) kill(pid_, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  reaped_ = true;
  if (WIFEXITED(status)) result_.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result_.term_signal = WTERMSIG(status);
  return result_;
}

RunResult run_paisoar(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  LauncherRun run(args, env);
  return run.finish();
}

std::vector<std::string> probe_launch(const std::vector<std::string>& flags,
                                      const std::vector<std::string>& actions) {
  std::vector<std::string> args = {"launch"};
  bool port_given = false;
  for (const std::string& f : flags) {
    port_given = port_given || f.rfind("--master_port", 0) == 0 ||
                 f.rfind("--master-port", 0) == 0 || f == "--standalone" ||
                 f.rfind("--rdzv-endpoint", 0) == 0 || f.rfind("--rdzv_endpoint", 0) == 0;
  }
  if (!port_given) args.insert(args.end(), {"--master_port", "0"});
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back(LAUNCH_PROBE);
  args.insert(args.end(), actions.begin(), actions.end());
  return args;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::map<int, std::map<std::string, std::string>> values_by_rank(const std::string& out) {
  std::map<int, std::map<std::string, std::string>> values;
  for (const std::string& line : lines_of(out)) {
    int rank = -1;
    int consumed = 0;
    if (std::sscanf(line.c_str(), "[rank%d]: %n", &rank, &consumed) != 1 || consumed == 0)
      continue;
    std::string rest = line.substr(static_cast<std::size_t>(consumed));
    std::size_t eq = rest.find('=');
    if (eq != std::string::npos) values[rank][rest.substr(0, eq)] = rest.substr(eq + 1);
  }
  return values;
}

bool process_alive(pid_t pid) {
  if (pid <= 0 || kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::size_t paren = content.rfind(')');
  return paren == std::string::npos || paren + 2 >= content.size() || content[paren + 2] != 'Z';
}

bool wait_until_dead(pid_t pid, double timeout_s) {
  auto start = Clock::now();
  while (process_alive(pid)) {
    if (seconds_since(start) > timeout_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

pid_t child_with_rank(pid_t parent, int rank) {
  const auto read_all = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return -1;
  pid_t found = -1;
  while (dirent* e = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    const std::string stat = read_all("/proc/" + std::to_string(pid) + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    int ppid = 0;
    char state = 0;
    if (std::sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) != 2 || ppid != parent) continue;
    const std::string env = read_all("/proc/" + std::to_string(pid) + "/environ");
    const std::string wanted = "RANK=" + std::to_string(rank);
    for (size_t at = 0; at < env.size();) {  // NUL-separated NAME=value entries
      const size_t end = std::min(env.find('\0', at), env.size());
      if (env.compare(at, end - at, wanted) == 0) found = pid;
      at = end + 1;
    }
    if (found > 0) break;
  }
  ::closedir(proc);
  return found;
}

std::string make_temp_dir() {
  std::string pattern = (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
  pattern += "/paisoar_launch_test.XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return pattern;
}

pid_t read_pid_file(const std::string& path, double timeout_s) {
  auto start = Clock::now();
  for (;;) {
    std::ifstream in(path);
    int pid = -1;
    if (in >> pid) return pid;
    if (seconds_since(start) > timeout_s) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace paisoar::launch::testing
