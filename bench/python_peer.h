// find_python_peer: the PyTorch (Python) program a benchmark runs next to
// ours, and the interpreter for it, or the reason there is none.
#pragma once

#include <string>

namespace paisoar::bench {

struct PythonPeer {
  std::string python;         // $PAISOAR_PYTHON, else the Python CMake built against (the venv)
  std::string script;         // the peer program
  std::string torch_version;  // what `import torch` reported
  std::string missing;        // non-empty: why the peer cannot run
  bool ok() const { return missing.empty(); }
};

// `script_name` (e.g. "ddp_peer.py") is looked up in `override_path` when
// given, else next to the binary (../share/paisoar/bench/), else in this
// source tree's bench/. The interpreter must import torch.
PythonPeer find_python_peer(const std::string& script_name, const std::string& override_path);

}  // namespace paisoar::bench
