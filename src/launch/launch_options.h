// The options of `paisoar launch` (torchrun 2.x's flags) and their parser.
// parse_launch_options() turns argv into a validated LaunchOptions or throws
// LaunchUsageError with a message that names the flag and says what to do.
#pragma once

#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "launch/core_placement.h"
#include "launch/node_devices.h"
#include "launch/std_spec.h"

namespace paisoar::launch {

// How the program is run (torchrun's --no-python, --module, --run-path).
enum class PythonMode {
  kBySuffix,  // a program ending in .py runs under Python, anything else directly
  kNever,     // --no-python: always directly
  kModule,    // -m/--module: `python -m PROGRAM ARGS...`
  kScript,    // --run-path: `python PROGRAM ARGS...`, whatever its name
};

struct LaunchOptions {
  // Ranks started on this node (--nproc-per-node N|auto|cpu|gpu).
  int nproc_per_node = 1;
  // Nodes in the job; every node runs its own launcher (--nnodes N, or
  // MIN:MAX with MIN == MAX).
  int nnodes = 1;
  // This node's index, 0 <= node_rank < nnodes (--node-rank).
  int node_rank = 0;
  // Where node 0's launcher hosts the rendezvous store (--master-addr, or
  // --rdzv-endpoint's host).
  std::string master_addr = "127.0.0.1";
  // Port of the rendezvous store; 0 picks a free port, single node only
  // (--master-port, or --rdzv-endpoint's port).
  int master_port = 29500;
  // How many times the whole group is restarted after a rank fails (--max-restarts).
  int max_restarts = 0;
  // When set, rank R's output also goes to <log_dir>/rank_<R>.log (--log-dir).
  std::string log_dir;
  // Streams kept off the console (they go to the log files only): --redirects.
  StdSpec redirects;
  // Streams written to the log files and the console: --tee.
  StdSpec tee;
  // Local ranks whose output reaches the console; empty: all (--local-ranks-filter).
  std::set<int> local_ranks_filter;
  // Prefix each relayed line with "[rank<R>]: "; --no_prefix turns it off.
  bool prefix_output = true;
  // Seconds between SIGTERM and SIGKILL when ranks are stopped
  // (--grace-period, or torchrun's --shutdown-timeout).
  double grace_period_s = 5.0;
  // Seconds a rank may go without touching its heartbeat file before the
  // launcher stops the group as failed; 0: no watchdog (--heartbeat_timeout).
  double heartbeat_timeout_s = 0.0;
  // Seconds a rank may wait in a collective that another rank of this node
  // did not reach before the launcher names that rank (from the ranks'
  // flight records, PAISOAR_FLIGHT_RECORD) and stops the group as failed;
  // 0: off (--hang_timeout). docs/DIAGNOSIS.md.
  double hang_timeout_s = 30.0;
  // Several nodes: seconds every launcher waits for all nodes to join each
  // generation of the job (its start and every restart) before it ends the
  // job (--join-timeout, or --rdzv-conf join_timeout=S).
  double join_timeout_s = 60.0;
  // Whether ranks are bound to cores (--bind_to auto|core|none,
  // core_placement.h); auto: core for a program run directly, none for one
  // run under Python (see bind_for_program).
  BindTo bind_to = BindTo::kAuto;
  // Print each rank's CPUs (--report_bindings).
  bool report_bindings = false;
  // OMP_NUM_THREADS for the ranks; unset: keep the user's, else cores / nproc_per_node.
  std::optional<int> omp_num_threads;
  // TORCHELASTIC_RUN_ID (--rdzv-id); "": a random id, the same on every node.
  std::string run_id;
  // ROLE_NAME (--role).
  std::string role = "default";
  PythonMode python_mode = PythonMode::kBySuffix;
  // The program and its arguments, passed through unchanged. Never empty once parsed.
  std::vector<std::string> program;

  int world_size() const { return nnodes * nproc_per_node; }
  // Whether `stream` (kStdOut or kStdErr) of `local_rank` is relayed to the
  // launcher's console: not redirected, and the rank passes the filter.
  bool on_console(int local_rank, int stream) const;
  // --redirects or --tee asked for log files.
  bool wants_log_files() const { return redirects.any() || tee.any(); }
};

// A bad command line. The launcher prints what() and exits with code 2.
class LaunchUsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses the arguments of `paisoar launch`; argv[0] is the subcommand's name
// and is skipped. `devices` turns --nproc-per-node auto|cpu|gpu into a
// number. Returns std::nullopt when --help was asked for (the caller prints
// launch_help_text()). Throws LaunchUsageError on a bad command line.
std::optional<LaunchOptions> parse_launch_options(int argc, const char* const* argv,
                                                  const NodeDevices& devices);

// The text printed by `paisoar launch --help`.
std::string launch_help_text();

}  // namespace paisoar::launch
