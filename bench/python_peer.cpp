// find_python_peer: script lookup and a probe that the interpreter has torch.
#include "bench/python_peer.h"

#include <sys/stat.h>
#include <torch/version.h>

#include <cstdlib>

#include "apps/paisoar-core/commands.h"
#include "bench/child_process.h"

namespace paisoar::bench {
namespace {

bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

PythonPeer find_python_peer(const std::string& script_name, const std::string& override_path) {
  PythonPeer peer;
  const char* env_python = std::getenv("PAISOAR_PYTHON");
  peer.python = env_python != nullptr && *env_python != '\0' ? env_python : PAISOAR_DEFAULT_PYTHON;
  const std::string exe = app::self_executable();
  const std::string installed =
      exe.substr(0, exe.rfind('/')) + "/../share/paisoar/bench/" + script_name;
  peer.script = !override_path.empty() ? override_path
                : is_file(installed)   ? installed
                                       : std::string(PAISOAR_SOURCE_BENCH_DIR) + "/" + script_name;
  if (!is_file(peer.script)) {
    peer.missing = "the peer script " + peer.script + " does not exist; pass --peer-script PATH";
    return peer;
  }
  try {
    auto probe = run_child({peer.python, "-c", "import torch; print(torch.__version__)"});
    if (probe.status.success()) {
      peer.torch_version = last_line(probe.out);
      return peer;
    }
    peer.missing = peer.python + " cannot import torch (" + last_line(probe.err) + ")";
  } catch (const launch::SpawnError& e) {
    peer.missing = e.what();
  }
  peer.missing += "; set PAISOAR_PYTHON to a Python with PyTorch " +
                  std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) +
                  " (scripts/setup.sh makes the project's venv with it)";
  return peer;
}

}  // namespace paisoar::bench
