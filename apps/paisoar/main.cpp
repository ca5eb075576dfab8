// The `paisoar` command, git-style: `paisoar launch` runs the launcher in this
// process; every other subcommand (demo, bench, train, convert, ...) is
// handed, argv unchanged, to the sibling binary paisoar-core, which links
// LibTorch. Keeping LibTorch out of this binary keeps `paisoar launch` fast.
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "launch/launch.h"

#ifndef PAISOAR_VERSION
#error "PAISOAR_VERSION must be defined by the build (PROJECT_VERSION)"
#endif

namespace {

constexpr const char* kCoreName = "paisoar-core";

struct Subcommand {
  const char* name;
  const char* summary;
  bool in_core;  // provided by paisoar-core rather than this binary
};

constexpr Subcommand kSubcommands[] = {
    {"launch", "start N ranks of a program as one distributed job (torchrun's flags)", false},
    {"train", "data-parallel mixed-precision training of the reference CNN on Fashion-MNIST", true},
    {"convert", "IDX files or an image folder into record shards for fast loading", true},
    {"zero-consolidate", "a sharded ZeRO checkpoint into one full safetensors model file", true},
    {"checkpoint", "verify, inspect or reshard a training checkpoint", true},
    {"report", "a run's metrics as an HTML page with plots, and a PNG", true},
    {"plan", "rank every layout of a config on N ranks by predicted step time and memory", true},
    {"demo", "check collectives across the launched ranks", true},
    {"bench", "benchmarks against the peers (comm, optim, amp, ddp)", true},
};

void print_usage(std::FILE* out) {
  std::fprintf(out,
               "paisoar %s: training acceleration for LibTorch\n\n"
               "Usage: paisoar <command> [args...]\n"
               "       paisoar help <command>\n"
               "       paisoar --version\n\nCommands:\n",
               PAISOAR_VERSION);
  for (const Subcommand& c : kSubcommands) {
    std::fprintf(out, "  %-16s %s%s\n", c.name, c.summary, c.in_core ? " (paisoar-core)" : "");
  }
  std::fprintf(out,
               "\nCommands marked (paisoar-core) run the paisoar-core binary installed next to\n"
               "this one; set PAISOAR_CORE to use another. Run 'paisoar <command> --help'.\n");
}

// The directory holding the running executable, from /proc/self/exe.
std::string own_directory() {
  char path[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "";
  std::string exe(path, static_cast<std::size_t>(n));
  std::size_t slash = exe.rfind('/');
  return slash == std::string::npos ? "" : exe.substr(0, slash);
}

// Replaces this process with paisoar-core, passing argv[1..] unchanged.
// Returns only on failure, with the exit code to use.
int exec_core(int argc, char** argv) {
  std::vector<std::string> candidates;
  const char* override_path = std::getenv("PAISOAR_CORE");
  if (override_path != nullptr && *override_path != '\0') {
    candidates.push_back(override_path);
  } else {
    std::string dir = own_directory();
    if (!dir.empty()) candidates.push_back(dir + "/" + kCoreName);
    std::string installed = std::string(PAISOAR_INSTALL_BINDIR) + "/" + kCoreName;
    if (candidates.empty() || candidates.front() != installed) candidates.push_back(installed);
  }
  for (const std::string& core : candidates) {
    if (::access(core.c_str(), X_OK) != 0) continue;
    std::vector<char*> core_argv;
    core_argv.push_back(const_cast<char*>(core.c_str()));
    for (int i = 1; i < argc; ++i) core_argv.push_back(argv[i]);
    core_argv.push_back(nullptr);
    ::execv(core.c_str(), core_argv.data());
    std::fprintf(stderr, "paisoar: cannot run %s: %s\n", core.c_str(), std::strerror(errno));
    return 126;
  }
  std::string looked;
  for (const std::string& c : candidates) looked += (looked.empty() ? "" : " or ") + c;
  std::fprintf(stderr,
               "paisoar: '%s' is provided by %s, which was not found at %s.\n"
               "Build it (it needs LibTorch: configure without -DPAISOAR_LAUNCH_ONLY=ON), "
               "install it next to this binary, or set PAISOAR_CORE to its path.\n",
               argv[1], kCoreName, looked.c_str());
  return 127;
}

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  const std::string command = argv[1];
  if (command == "--help" || command == "-h") {
    print_usage(stdout);
    return 0;
  }
  if (command == "--version" || command == "-V") {
    std::printf("paisoar %s\n", PAISOAR_VERSION);
    return 0;
  }
  if (command == "help") {
    if (argc < 3) {
      print_usage(stdout);
      return 0;
    }
    // `paisoar help X` is `paisoar X --help`.
    std::vector<char*> args = {argv[0], argv[2], const_cast<char*>("--help"), nullptr};
    return dispatch(3, args.data());
  }
  if (command == "launch") return paisoar::launch_main(argc - 1, argv + 1);
  if (!command.empty() && command[0] == '-') {
    std::fprintf(stderr, "paisoar: unknown option '%s'. Run 'paisoar --help'.\n", argv[1]);
    return 2;
  }
  bool known = false;
  std::string names;
  for (const Subcommand& c : kSubcommands) {
    known = known || command == c.name;
    names += std::string(names.empty() ? "" : ", ") + c.name;
  }
  if (!known) {
    std::fprintf(stderr, "paisoar: unknown command '%s'; the commands are %s. Run 'paisoar --help'.\n",
                 command.c_str(), names.c_str());
    return 2;
  }
  return exec_core(argc, argv);
}

}  // namespace

int main(int argc, char** argv) { return dispatch(argc, argv); }
