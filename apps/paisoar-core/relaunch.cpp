// relaunch_unless_launched: lets `paisoar demo` or `paisoar bench comm` be run
// directly; they re-run themselves under `paisoar launch`. self_executable:
// the path they (and `bench amp`'s workers) re-run.
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/paisoar-core/commands.h"
#include "paisoar/comm/env.h"

namespace paisoar::app {

void relaunch_unless_launched(int nproc, int argc, char** argv) {
  // Started by paisoar launch, torchrun, srun or mpirun: run as one of their ranks.
  if (comm::rank_info_from_env().source != "default") return;
  std::vector<std::string> command = {self_executable()};
  for (int i = 1; i < argc; ++i) command.emplace_back(argv[i]);
  std::vector<std::string> args = launch_argv(nproc, command);
  const std::string launcher = args[0];
  std::vector<char*> raw;
  for (auto& a : args) raw.push_back(a.data());
  raw.push_back(nullptr);
  execv(launcher.c_str(), raw.data());
  throw std::runtime_error("could not start the launcher " + launcher +
                           "; run `paisoar launch --nproc_per_node N -- paisoar ...` yourself");
}

std::vector<std::string> launch_argv(int nproc, const std::vector<std::string>& command) {
  const std::string exe = self_executable();
  std::vector<std::string> argv = {exe.substr(0, exe.rfind('/') + 1) + "paisoar", "launch",
                                   "--nproc_per_node", std::to_string(nproc), "--master_port", "0",
                                   "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

std::string self_executable() {
  char self[PATH_MAX] = {};
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) throw std::runtime_error("cannot find this program's path in /proc/self/exe");
  return std::string(self, static_cast<size_t>(n));
}

}  // namespace paisoar::app
