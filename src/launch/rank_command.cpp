// rank_command(): runs Python programs as torchrun does, others directly.
#include "launch/rank_command.h"

#include <unistd.h>

#include <cassert>

#ifndef PAISOAR_BUILT_WITH_PYTHON
#error "PAISOAR_BUILT_WITH_PYTHON must be defined by the build (src/launch/CMakeLists.txt)"
#endif

namespace paisoar::launch {

std::string built_with_python() { return PAISOAR_BUILT_WITH_PYTHON; }

PythonInterpreter python_interpreter(const std::string& paisoar_python,
                                     const std::string& python_exec,
                                     const std::string& built_with) {
  if (!paisoar_python.empty()) return {paisoar_python, "$PAISOAR_PYTHON"};
  if (!python_exec.empty()) return {python_exec, "$PYTHON_EXEC"};
  if (built_with.find('/') != std::string::npos && ::access(built_with.c_str(), X_OK) == 0)
    return {built_with, kBuiltWithSource};
  return {kDefaultPython, kDefaultSource};
}

bool is_python_script(const std::string& program) {
  const std::string suffix = ".py";
  return program.size() > suffix.size() &&
         program.compare(program.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool runs_under_python(const std::vector<std::string>& program, PythonMode mode) {
  assert(!program.empty());
  switch (mode) {
    case PythonMode::kNever:
      return false;
    case PythonMode::kModule:
    case PythonMode::kScript:
      return true;
    case PythonMode::kBySuffix:
      break;
  }
  return is_python_script(program.front());
}

std::vector<std::string> rank_command(const std::vector<std::string>& program, PythonMode mode,
                                      const std::string& python) {
  if (!runs_under_python(program, mode)) return program;
  // -u: unbuffered, so a rank's prints reach the launcher as they are made.
  std::vector<std::string> argv = {python.empty() ? kDefaultPython : python, "-u"};
  if (mode == PythonMode::kModule) argv.push_back("-m");
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

}  // namespace paisoar::launch
