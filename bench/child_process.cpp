// run_child: posix_spawn with stdout and stderr drained through pipes by poll;
// run_json_child: the same with an --out file in /tmp.
#include "bench/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "launch/unique_fd.h"

extern char** environ;

namespace paisoar::bench {
namespace {

using launch::UniqueFd;

std::pair<UniqueFd, UniqueFd> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw launch::SpawnError(std::string("cannot create a pipe: ") + strerror(errno), errno);
  }
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Appends to `lines` the complete lines that `sink` gained since `*scanned`.
void take_lines(const std::string& sink, size_t* scanned, bool err, double seconds, std::vector<TimedLine>* lines) {
  for (size_t newline; (newline = sink.find('\n', *scanned)) != std::string::npos; *scanned = newline + 1) {
    lines->push_back({seconds, err, sink.substr(*scanned, newline - *scanned)});
  }
}

// run_child's body; `lines` may be null (no line splitting).
ChildResult spawn_and_drain(const std::vector<std::string>& argv, std::vector<TimedLine>* lines) {
  if (argv.empty()) throw std::invalid_argument("run_child: empty argv");
  auto [out_r, out_w] = make_pipe();
  auto [err_r, err_w] = make_pipe();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_w.get(), STDERR_FILENO);
  auto c_argv = c_strings(argv);
  pid_t pid = -1;
  const auto started = std::chrono::steady_clock::now();
  int rc = posix_spawnp(&pid, c_argv[0], &actions, nullptr, c_argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw launch::SpawnError("cannot start '" + argv[0] + "': " + strerror(rc), rc);
  out_w.reset();  // only the child holds the write ends now: EOF when it exits
  err_w.reset();

  ChildResult result;
  pollfd fds[2] = {{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  size_t scanned[2] = {0, 0};  // how far each sink has been split into lines
  int open_fds = 2;
  char buf[1 << 16];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
        if (lines != nullptr) take_lines(*sinks[i], &scanned[i], i == 1, now, lines);
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;  // poll ignores negative descriptors
        --open_fds;
        if (lines != nullptr && scanned[i] < sinks[i]->size()) {  // a last line without '\n'
          lines->push_back({now, i == 1, sinks[i]->substr(scanned[i])});
        }
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.status = launch::ExitStatus::from_wait_status(status);
  return result;
}

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv) { return spawn_and_drain(argv, nullptr); }

ChildResult run_child(const std::vector<std::string>& argv, std::vector<TimedLine>* lines) {
  if (lines == nullptr) throw std::invalid_argument("run_child: lines is null");
  return spawn_and_drain(argv, lines);
}

nlohmann::json run_json_child(std::vector<std::string> argv, const std::string& who) {
  char name[] = "/tmp/paisoar_bench_XXXXXX";
  const int fd = ::mkstemp(name);
  if (fd < 0) throw std::runtime_error("cannot create a temporary file in /tmp");
  ::close(fd);
  const std::string out = name;
  argv.push_back("--out");
  argv.push_back(out);
  auto child = run_child(argv);
  nlohmann::json result;
  std::ifstream in(out);
  bool ok = child.status.success();
  try {
    ok = ok && (in >> result);
  } catch (const nlohmann::json::exception&) {
    ok = false;
  }
  std::remove(out.c_str());
  if (!ok) {
    throw std::runtime_error(who + " " + child.status.describe() + "; its output ends with: " +
                             child.err.substr(child.err.size() > 2000 ? child.err.size() - 2000 : 0));
  }
  return result;
}

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of("\r\n");
  if (end == std::string::npos) return "";
  size_t newline = text.rfind('\n', end);
  size_t start = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(start, end + 1 - start);
}

}  // namespace paisoar::bench
