// rank_command(): runs *.py programs under $PAISOAR_PYTHON or python3.
#include "launch/rank_command.h"

#include <cassert>

namespace paisoar::launch {

bool is_python_script(const std::string& program) {
  const std::string suffix = ".py";
  return program.size() > suffix.size() &&
         program.compare(program.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> rank_command(const std::vector<std::string>& program,
                                      const std::string& paisoar_python) {
  assert(!program.empty());
  if (!is_python_script(program.front())) return program;
  std::vector<std::string> argv;
  argv.reserve(program.size() + 1);
  argv.push_back(paisoar_python.empty() ? kDefaultPython : paisoar_python);
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

}  // namespace paisoar::launch
