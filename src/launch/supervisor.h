// Runs one attempt of the local rank group: starts every rank, relays their
// output, waits for them, and stops them all (SIGTERM, then SIGKILL after the
// grace period) as soon as one fails or the launcher is interrupted.
// Whether to restart is the caller's decision (see launch_main.cpp).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "launch/job_events.h"
#include "launch/rank_log_files.h"
#include "launch/rank_process.h"
#include "launch/signal_channel.h"

namespace paisoar::launch {

// What to run as one rank.
struct RankSpec {
  int local_rank = 0;
  int global_rank = 0;
  std::vector<std::string> argv;  // program and arguments; argv[0] is searched in PATH
  std::vector<std::string> env;   // the whole environment, "NAME=value"
  // The file the rank touches as it makes progress (PAISOAR_HEARTBEAT_FILE in
  // `env`); "" when there is no watchdog.
  std::string heartbeat_file;
  // TORCHELASTIC_ERROR_FILE in `env`: when the rank fails, the message it
  // left there is printed (and reported to the other nodes); "" for none.
  std::string error_file;
  // Whether the rank's stdout and stderr lines reach the launcher's own
  // (--redirects, --local-ranks-filter); they reach its log file either way.
  bool stdout_on_console = true;
  bool stderr_on_console = true;
  // The rank's flight record (PAISOAR_FLIGHT_RECORD in `env`), read for the
  // hang diagnosis; "" when it is off.
  std::string flight_record{};
  // The CPUs the rank is bound to (core_placement.h); empty: the launcher's mask.
  std::vector<int> cpus{};
};

struct SupervisorOptions {
  // Seconds between the stop signal and SIGKILL; at most kMaxSeconds
  // (flag_values.h), which keeps the SIGKILL deadline and poll()'s timeout
  // in range.
  double grace_period_s = 5.0;
  // Prefix relayed lines with "[rank<R>]: ".
  bool prefix_output = true;
  // A rank whose heartbeat file exists and is older than this many seconds
  // is reported and the group stopped as failed; 0: no watchdog. A rank is
  // judged only after its first beat, so a slow start is never "no progress".
  double heartbeat_timeout_s = 0.0;
  // A rank waiting this long in a collective another local rank did not
  // reach (launch/hang_diagnosis.h) ends the group as failed, naming that
  // rank; 0: off. Ranks in setup, a checkpoint or an evaluation get
  // hang_long_activity_s.
  double hang_timeout_s = 0.0;
  double hang_long_activity_s = 300.0;
  // Where relayed lines and the launcher's messages go.
  int stdout_fd = STDOUT_FILENO;
  int stderr_fd = STDERR_FILENO;
};

// How a rank that failed ended.
struct RankExit {
  int local_rank = 0;
  int global_rank = 0;
  pid_t pid = -1;
  ExitStatus status;
};

struct GroupOutcome {
  enum class Kind {
    kSucceeded,    // every rank exited with code 0
    kRankFailed,   // `failure` is the first rank that failed; the others were stopped
    kInterrupted,  // the launcher got `signal`; the ranks were stopped
    kSpawnFailed,  // a rank could not be started (`spawn_error`); the others were stopped
    kStoppedByJob,  // another node failed or ended the job (`reason`); the ranks were stopped
    kJobLost,       // the rendezvous store is gone (`reason`); the ranks were stopped
  };
  Kind kind = Kind::kSucceeded;
  std::optional<RankExit> failure;
  int signal = 0;
  std::optional<SpawnError> spawn_error;
  // kStoppedByJob, kJobLost: what the job or the connection said.
  std::string reason;
};

// Not thread-safe; one run() at a time. Holds references to `signals` and
// `logs`, which must outlive it.
//
// When run() returns, every rank has been waited for and every process left
// in a rank's process group has been sent SIGKILL, or had closed the rank's
// output pipes after SIGTERM.
class Supervisor {
 public:
  Supervisor(SupervisorOptions options, SignalChannel& signals, const RankLogFiles& logs);

  // With `job` (multi-node), a verdict of the other nodes stops the group
  // (kStoppedByJob), and the first failure here is reported to them; a lost
  // connection to the job stops the group too (kJobLost). `job` must outlive
  // the call.
  GroupOutcome run(const std::vector<RankSpec>& ranks, JobEvents* job = nullptr);

 private:
  SupervisorOptions options_;
  SignalChannel& signals_;
  const RankLogFiles& logs_;
};

}  // namespace paisoar::launch
