// The options of `paisoar launch` (torchrun's flags) and their parser.
// parse_launch_options() turns argv into a validated LaunchOptions or throws
// LaunchUsageError with a message that names the flag and says what to do.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace paisoar::launch {

struct LaunchOptions {
  // Ranks started on this node (--nproc_per_node).
  int nproc_per_node = 1;
  // Nodes in the job; every node runs its own launcher (--nnodes).
  int nnodes = 1;
  // This node's index, 0 <= node_rank < nnodes (--node_rank).
  int node_rank = 0;
  // Where rank 0 hosts the rendezvous store (--master_addr).
  std::string master_addr = "127.0.0.1";
  // Port of the rendezvous store; 0 picks a free port, single node only (--master_port).
  int master_port = 29500;
  // How many times the whole group is restarted after a rank fails (--max_restarts).
  int max_restarts = 0;
  // When set, rank R's output also goes to <log_dir>/rank_<R>.log (--log_dir).
  std::string log_dir;
  // Prefix each relayed line with "[rank<R>]: "; --no_prefix turns it off.
  bool prefix_output = true;
  // Seconds between SIGTERM and SIGKILL when ranks are stopped (--grace_period).
  double grace_period_s = 5.0;
  // Seconds a rank may go without touching its heartbeat file before the
  // launcher stops the group as failed; 0: no watchdog (--heartbeat_timeout).
  double heartbeat_timeout_s = 0.0;
  // Several nodes: seconds every launcher waits for all nodes to join each
  // generation of the job (its start and every restart) before it ends the
  // job (--join_timeout).
  double join_timeout_s = 60.0;
  // OMP_NUM_THREADS for the ranks; unset: keep the user's, else cores / nproc_per_node.
  std::optional<int> omp_num_threads;
  // The program and its arguments, passed through unchanged. Never empty once parsed.
  std::vector<std::string> program;

  int world_size() const { return nnodes * nproc_per_node; }
};

// A bad command line. The launcher prints what() and exits with code 2.
class LaunchUsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses the arguments of `paisoar launch`; argv[0] is the subcommand's name
// and is skipped. Returns std::nullopt when --help was asked for (the caller
// prints launch_help_text()). Throws LaunchUsageError on a bad command line.
std::optional<LaunchOptions> parse_launch_options(int argc, const char* const* argv);

// The text printed by `paisoar launch --help`.
std::string launch_help_text();

}  // namespace paisoar::launch
