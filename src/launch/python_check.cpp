// look_for_torch() and the message for ranks under a Python without torch.
#include "launch/python_check.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>

#include "launch/rank_process.h"

namespace paisoar::launch {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kFindTorch =
    "import importlib.util\n"
    "print('torch: found' if importlib.util.find_spec('torch') else 'torch: missing')";

// Reads the check's stdout into `out` (its stderr is read and dropped, so it
// never blocks on a full pipe) until both end or `deadline`; false on the deadline.
bool read_until_eof(RankProcess& check, std::string* out, Clock::time_point deadline) {
  char buf[4096];
  while (check.stdout_fd.valid() || check.stderr_fd.valid()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd fds[2] = {{check.stdout_fd.get(), POLLIN, 0}, {check.stderr_fd.get(), POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(left.count())) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].revents == 0) continue;
      UniqueFd& fd = i == 0 ? check.stdout_fd : check.stderr_fd;
      const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
      if (n > 0 && i == 0 && out->size() < sizeof(buf)) out->append(buf, static_cast<std::size_t>(n));
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) fd.reset();
    }
  }
  return true;
}

}  // namespace

TorchLookup look_for_torch(const std::string& python, const std::vector<std::string>& env,
                           double timeout_s) {
  RankProcess check;
  try {
    check = spawn_rank({python, "-c", kFindTorch}, env);
  } catch (const SpawnError&) {
    return TorchLookup::kUnknown;
  }
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::string out;
  const bool ended = read_until_eof(check, &out, deadline);
  if (!ended) signal_group(check.pid, SIGKILL, true);
  int status = 0;
  while (::waitpid(check.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!ended || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return TorchLookup::kUnknown;
  if (out == "torch: found\n") return TorchLookup::kFound;
  if (out == "torch: missing\n") return TorchLookup::kMissing;
  return TorchLookup::kUnknown;
}

std::string resolve_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (name.find('/') != std::string::npos || path == nullptr) return name;
  const std::string dirs = path;
  for (std::size_t start = 0; start <= dirs.size();) {
    std::size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    const std::string dir = colon == start ? "." : dirs.substr(start, colon - start);
    const std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = colon + 1;
  }
  return name;
}

std::string missing_torch_message(const PythonInterpreter& python, const std::string& built_with) {
  std::string text = "the ranks ran under Python '" + resolve_in_path(python.path) + "' (" +
                     python.source + "), which cannot import torch: it finds no torch package. ";
  std::string example = "/path/to/venv/bin/python";
  std::string set = "set";
  if (python.source == kBuiltWithSource) {
    text += "Reinstall torch in its environment, or ";
  } else if (python.source == kDefaultSource) {
    text += built_with.find('/') == std::string::npos
                ? "This paisoar was built without a Python of its own (PAISOAR_PYTHON). "
                : "The Python this paisoar was built with, " + built_with + ", is not there any more. ";
    text += "Run the `paisoar` command of the Python environment that has torch and paisoar (it "
            "runs the ranks under that environment's Python), or ";
  } else {
    set = "Set";
    if (built_with.find('/') != std::string::npos && built_with != python.path)
      example = built_with + " (the Python this paisoar was built with)";
  }
  text += set + " PAISOAR_PYTHON to the Python of an environment with torch and paisoar, e.g. "
          "PAISOAR_PYTHON=" + example + ".";
  return text;
}

}  // namespace paisoar::launch
