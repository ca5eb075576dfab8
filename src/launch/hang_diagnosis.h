// Hang diagnosis: from every local rank's flight record (src/util/flight_record.h)
// and whether its process is stopped, decide whether the job is hung and who
// holds it up: a rank that did not reach the collective the others wait in
// (stopped, stuck in data loading or compute, or waiting in another
// collective: mismatched control flow), or ranks whose collectives of the
// same number differ. Pure: the launcher's supervisor feeds it; tests build
// the records by hand. docs/DIAGNOSIS.md.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/flight_record.h"

namespace paisoar::launch {

struct RankRecord {
  int global_rank = 0;
  int local_rank = 0;
  pid_t pid = 0;
  bool stopped = false;              // state T in /proc (SIGSTOP)
  util::FlightSnapshot record;       // empty (rank -1) when unreadable
};

struct HangLimits {
  double wait_s = 30;         // a rank waiting this long in a collective others did not reach is a hang
  double long_activity_s = 300;  // ... unless they are in setup, a checkpoint or an evaluation: this long
};

struct HangVerdict {
  int culprit = -1;        // the global rank named first (the launcher reports it as the failed one)
  std::string message;     // one paragraph, for the launcher's stderr
};

// nullopt: no hang (yet). `now_ns`: CLOCK_MONOTONIC, like the records.
std::optional<HangVerdict> diagnose_hang(const std::vector<RankRecord>& ranks, int64_t now_ns,
                                         const HangLimits& limits);

}  // namespace paisoar::launch
