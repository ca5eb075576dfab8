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

// The interpreter used when neither $PAISOAR_PYTHON nor $PYTHON_EXEC is set.
inline constexpr const char* kDefaultPython = "python3";

// The interpreter: `paisoar_python` ($PAISOAR_PYTHON) when not empty, else
// `python_exec` (torchrun's $PYTHON_EXEC), else kDefaultPython.
std::string python_interpreter(const std::string& paisoar_python, const std::string& python_exec);

// True when `program` (a path) names a Python script.
bool is_python_script(const std::string& program);

// Whether `program` runs under Python in `mode`. REQUIRES: program is not empty.
bool runs_under_python(const std::vector<std::string>& program, PythonMode mode);

// Returns `program` unchanged, or {python, "-u", [-m,] program...} when it
// runs under Python. REQUIRES: program is not empty.
std::vector<std::string> rank_command(const std::vector<std::string>& program, PythonMode mode,
                                      const std::string& python);

}  // namespace paisoar::launch
