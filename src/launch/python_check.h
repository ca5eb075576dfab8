// After a Python rank failed: can its interpreter find torch at all? A rank
// started under a Python without torch dies with "No module named 'torch'"
// and nothing says which Python that was; this check lets the launcher name
// the interpreter and say what to do.
#pragma once

#include <string>
#include <vector>

#include "launch/rank_command.h"

namespace paisoar::launch {

enum class TorchLookup {
  kFound,    // importlib finds a torch package
  kMissing,  // it finds none
  kUnknown,  // the interpreter could not be started, did not answer in time, or is no Python
};

// Asks `python` (with environment `env`: PYTHONPATH and the like matter)
// whether it finds torch, without importing it (importlib.util.find_spec,
// tens of milliseconds). Waits at most `timeout_s`, then kills it.
TorchLookup look_for_torch(const std::string& python, const std::vector<std::string>& env,
                           double timeout_s = 30);

// `name` as found in $PATH (the launcher's, as posix_spawnp searches it);
// `name` itself when it holds a '/' or is not found.
std::string resolve_in_path(const std::string& name);

// The launcher's message for ranks that ran under `python`, which finds no
// torch: the interpreter's path, why it was chosen, and what to do.
// `built_with` is built_with_python().
std::string missing_torch_message(const PythonInterpreter& python, const std::string& built_with);

}  // namespace paisoar::launch
