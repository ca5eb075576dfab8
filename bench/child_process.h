// run_child: runs a program to completion and captures its stdout and stderr,
// for benchmarks that measure each configuration in a fresh process.
#pragma once

#include <string>
#include <vector>

#include "launch/rank_process.h"

namespace paisoar::bench {

struct ChildResult {
  launch::ExitStatus status;
  std::string out;  // everything it wrote to stdout
  std::string err;  // everything it wrote to stderr
};

// Runs argv[0] (searched in PATH when it has no '/') with this process's
// environment and stdin from /dev/null, and waits for it. The child stays in
// this process group, so Ctrl-C stops it too. Throws launch::SpawnError when
// it cannot be started.
ChildResult run_child(const std::vector<std::string>& argv);

// The last non-empty line of `text` ("" if none).
std::string last_line(const std::string& text);

}  // namespace paisoar::bench
