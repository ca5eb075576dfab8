// run_child: runs a program to completion and captures its stdout and stderr,
// for benchmarks that measure each configuration in a fresh process; on
// request with each line's arrival time, for benchmarks that time what a child
// reports (bench recovery: a death, a restart, the first step after it); or
// reading the JSON the child writes to a file (run_json_child).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch/rank_process.h"

namespace paisoar::bench {

struct ChildResult {
  launch::ExitStatus status;
  std::string out;  // everything it wrote to stdout
  std::string err;  // everything it wrote to stderr
};

// One line of a child's output and when this process read it.
struct TimedLine {
  double seconds = 0;  // since the child was started (steady clock)
  bool err = false;    // from stderr (else stdout)
  std::string text;    // without the '\n'
};

// Runs argv[0] (searched in PATH when it has no '/') with this process's
// environment and stdin from /dev/null, and waits for it. The child stays in
// this process group, so Ctrl-C stops it too. Throws launch::SpawnError when
// it cannot be started.
ChildResult run_child(const std::vector<std::string>& argv);

// run_child that also appends to `*lines` every line of both streams, in the
// order they were read, as it arrives. REQUIRES: lines != nullptr.
ChildResult run_child(const std::vector<std::string>& argv, std::vector<TimedLine>* lines);
// Runs argv with `--out FILE` appended (a fresh temporary file), waits, and
// returns the JSON the program wrote there. Throws std::runtime_error saying
// `who` failed, with the end of its stderr, when it fails or writes no JSON.
nlohmann::json run_json_child(std::vector<std::string> argv, const std::string& who);

// The last non-empty line of `text` ("" if none).
std::string last_line(const std::string& text);

}  // namespace paisoar::bench
