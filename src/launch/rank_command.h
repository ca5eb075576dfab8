// The command line each rank runs: the user's program and arguments as
// given, or the program under a Python interpreter, as torchrun runs it
// (`python -u PROGRAM ARGS...`, `python -u -m MODULE ARGS...`): for a script
// ending in .py, and whatever the name with --run-path or --module; never
// with --no-python.
#pragma once

#include <string>
#include <vector>

#include "launch/launch_options.h"

namespace paisoar::launch {

// The interpreter used when nothing better is known: the first on PATH.
inline constexpr const char* kDefaultPython = "python3";

// The interpreter of Python ranks, and why it was chosen (for messages).
struct PythonInterpreter {
  std::string path;    // run as given; a name without '/' is searched in PATH
  std::string source;  // "$PAISOAR_PYTHON", "$PYTHON_EXEC", kBuiltWithSource or kDefaultSource
};
inline constexpr const char* kBuiltWithSource = "the Python this paisoar was built with";
inline constexpr const char* kDefaultSource = "the first python3 on PATH";

// The Python whose torch this build of paisoar was compiled against (cmake's
// PAISOAR_PYTHON); "" when it was built without one (PAISOAR_LAUNCH_ONLY, or
// -DTorch_DIR alone).
std::string built_with_python();

// The interpreter, as torchrun's is its own (sys.executable): `paisoar_python`
// ($PAISOAR_PYTHON, which the `paisoar` command of a Python environment sets
// to that environment's Python) when not empty, else `python_exec` (torchrun's
// $PYTHON_EXEC), else `built_with` when it is the path of an executable file,
// else kDefaultPython.
PythonInterpreter python_interpreter(const std::string& paisoar_python,
                                     const std::string& python_exec,
                                     const std::string& built_with);

// True when `program` (a path) names a Python script.
bool is_python_script(const std::string& program);

// Whether `program` runs under Python in `mode`. REQUIRES: program is not empty.
bool runs_under_python(const std::vector<std::string>& program, PythonMode mode);

// Returns `program` unchanged, or {python, "-u", [-m,] program...} when it
// runs under Python. REQUIRES: program is not empty.
std::vector<std::string> rank_command(const std::vector<std::string>& program, PythonMode mode,
                                      const std::string& python);

}  // namespace paisoar::launch
