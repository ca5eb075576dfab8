// RecoveryTimeline: what `paisoar bench recovery` reads from one run of
// `paisoar launch --max_restarts 1 ... paisoar train` in which a rank was
// killed: when each training step was reported by rank 0, when the launcher
// noticed the death and restarted the group, and when the restarted group
// resumed (from which step) and finished its first step. The times are when
// the bench read each line (bench/child_process.h), so they include the
// launcher's relay (well under a millisecond here).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/child_process.h"

namespace paisoar::bench {

struct RecoveryTimeline {
  // Rank 0's step lines ("[rank0]: epoch E step S/T ..."), step -> seconds,
  // before the restart (attempt 0) and after it (attempt 1).
  std::map<int64_t, double> steps_before, steps_after;
  double started_s = -1;   // attempt 0's first Trainer line (the run header)
  double noticed_s = -1;   // "paisoar launch: rank R ... was killed by signal" / "exited with code"
  double restart_s = -1;   // "paisoar launch: restarting the group"
  double resumed_s = -1;   // "[rank0]: resumed from <file> at step N"
  int64_t resumed_step = -1;
  double header_s = -1;    // attempt 1's run header, after the resume
  std::string failure;     // the launcher's line for the death it noticed
};

// Parses a killed-and-restarted run's output. Throws std::runtime_error naming
// what is missing (no restart, no resume, no step after it) with the output's
// last lines, so a run that went wrong is not mistaken for a measurement.
RecoveryTimeline parse_recovery(const std::vector<TimedLine>& lines);

// The rank-0 step lines of a run without a restart, step -> seconds.
std::map<int64_t, double> parse_steps(const std::vector<TimedLine>& lines);

// Seconds between the reports of step s-1 and s, for s in [from, to] where
// both are present: the wall time of step s as rank 0 saw it.
std::map<int64_t, double> step_gaps(const std::map<int64_t, double>& steps, int64_t from, int64_t to);

}  // namespace paisoar::bench
