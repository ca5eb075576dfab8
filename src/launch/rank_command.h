// The command line each rank runs: the user's program and arguments as
// given, or, for a Python script (*.py), the script under a Python interpreter.
#pragma once

#include <string>
#include <vector>

namespace paisoar::launch {

// The interpreter used when $PAISOAR_PYTHON is unset or empty.
inline constexpr const char* kDefaultPython = "python3";

// Returns `program` unchanged, or {python, program...} when program[0] ends
// in ".py"; python is `paisoar_python` when non-empty, else kDefaultPython.
// REQUIRES: program is not empty.
std::vector<std::string> rank_command(const std::vector<std::string>& program,
                                      const std::string& paisoar_python);

// True when `program` (a path) names a Python script.
bool is_python_script(const std::string& program);

}  // namespace paisoar::launch
