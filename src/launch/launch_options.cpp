// Parses and validates the command line of `paisoar launch` with CLI11.
// Flags accept torchrun's underscore spelling and the dash spelling.
#include "launch/launch_options.h"

#include <CLI/CLI.hpp>

#include <memory>

namespace paisoar::launch {
namespace {

constexpr const char* kHelpHint = " Run 'paisoar launch --help' for the flags.";

// CLI11's usage line cannot show the program and its arguments.
class LaunchFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: paisoar launch [OPTIONS] [--] PROGRAM [ARGS...]\n";
  }
};

// Holds the CLI11 app bound to one LaunchOptions. Both the parser and the help
// text come from here, so they cannot drift apart.
struct LaunchCli {
  CLI::App app{"Starts --nproc_per_node copies of PROGRAM as the ranks of a distributed job\n"
               "(like torchrun), relays their output and supervises them. A PROGRAM ending\n"
               "in .py runs under $PAISOAR_PYTHON, else python3.\n",
               "paisoar launch"};
  LaunchOptions options;
  int omp_num_threads = 0;
  bool standalone = false;

  LaunchCli() {
    LaunchOptions& o = options;
    app.prefix_command();  // stop at the program: its arguments are not ours
    app.formatter(std::make_shared<LaunchFormatter>());
    app.footer("Each rank gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,\n"
               "MASTER_ADDR, MASTER_PORT (= --master_port + 1), OMP_NUM_THREADS, torchrun's\n"
               "TORCHELASTIC_* variables, and PAISOAR_STORE_ADDR/PORT and PAISOAR_JOB_TOKEN\n"
               "for the launcher's rendezvous store. The job token comes from\n"
               "PAISOAR_JOB_TOKEN (required with --nnodes > 1) or is made up. See\n"
               "docs/LAUNCH.md.");
    app.add_option("--nproc_per_node,--nproc-per-node", o.nproc_per_node,
                   "Ranks to start on this node")
        ->capture_default_str();
    app.add_option("--nnodes", o.nnodes, "Nodes in the job, each running its own launcher")
        ->capture_default_str();
    app.add_option("--node_rank,--node-rank", o.node_rank, "Index of this node, 0..nnodes-1")
        ->capture_default_str();
    app.add_option("--master_addr,--master-addr", o.master_addr,
                   "Address of node 0, where the launcher hosts the rendezvous store")
        ->capture_default_str();
    app.add_option("--master_port,--master-port", o.master_port,
                   "Port of the launcher's rendezvous store on node 0; 0 picks a free one "
                   "(single node only)")
        ->capture_default_str();
    app.add_flag("--standalone", standalone,
                 "Single node on 127.0.0.1 with a free port (--nnodes 1 --master_port 0)");
    app.add_option("--max_restarts,--max-restarts", o.max_restarts,
                   "Restart the whole job (every node's ranks) up to this many times when a "
                   "rank fails")
        ->capture_default_str();
    app.add_option("--log_dir,--log-dir", o.log_dir,
                   "Also write rank R's output, unprefixed, to LOG_DIR/rank_R.log");
    app.add_flag_callback("--no_prefix,--no-prefix", [&o] { o.prefix_output = false; },
                          "Relay the ranks' lines without the '[rank<R>]: ' prefix");
    app.add_option("--grace_period,--grace-period", o.grace_period_s,
                   "Seconds between SIGTERM and SIGKILL when stopping ranks")
        ->capture_default_str();
    app.add_option("--heartbeat_timeout,--heartbeat-timeout", o.heartbeat_timeout_s,
                   "Stop and restart the group when a rank has not beaten its heartbeat "
                   "(PAISOAR_HEARTBEAT_FILE) for this many seconds; 0: off")
        ->capture_default_str();
    app.add_option("--join_timeout,--join-timeout", o.join_timeout_s,
                   "Several nodes: seconds to wait for every node to join the job at its start "
                   "and at each restart; a node missing then ends the job")
        ->capture_default_str();
    app.add_option("--omp_num_threads,--omp-num-threads", omp_num_threads,
                   "OMP_NUM_THREADS for each rank (default: the user's, else cores/nproc)");
  }
};

std::string fail(const std::string& what) {
  return "paisoar launch: " + what + kHelpHint;
}

void validate(LaunchOptions& o, const LaunchCli& cli) {
  if (o.nproc_per_node < 1)
    throw LaunchUsageError(fail("--nproc_per_node must be at least 1, got " +
                                std::to_string(o.nproc_per_node) + "."));
  if (o.nnodes < 1)
    throw LaunchUsageError(
        fail("--nnodes must be at least 1, got " + std::to_string(o.nnodes) + "."));
  if (o.node_rank < 0 || o.node_rank >= o.nnodes)
    throw LaunchUsageError(fail("--node_rank must be in 0.." + std::to_string(o.nnodes - 1) +
                                " for --nnodes " + std::to_string(o.nnodes) + ", got " +
                                std::to_string(o.node_rank) + "."));
  if (o.master_port < 0 || o.master_port > 65535)
    throw LaunchUsageError(fail("--master_port must be in 0..65535, got " +
                                std::to_string(o.master_port) + "."));
  if (o.master_port == 65535)
    throw LaunchUsageError(fail("--master_port must be at most 65534: the ranks get "
                                "MASTER_PORT = --master_port + 1 for stores they host themselves."));
  if (o.master_port == 0 && o.nnodes > 1)
    throw LaunchUsageError(
        fail("--master_port 0 (pick a free port) only works with --nnodes 1: the other "
             "nodes could not know the port. Give every node the same explicit --master_port."));
  if (o.master_addr.empty())
    throw LaunchUsageError(fail("--master_addr must not be empty."));
  if (o.max_restarts < 0)
    throw LaunchUsageError(fail("--max_restarts must be 0 or more, got " +
                                std::to_string(o.max_restarts) + "."));
  if (!(o.grace_period_s >= 0.0))
    throw LaunchUsageError(fail("--grace_period must be 0 or more seconds."));
  if (!(o.heartbeat_timeout_s >= 0.0))
    throw LaunchUsageError(fail("--heartbeat_timeout must be 0 (off) or more seconds."));
  if (!(o.join_timeout_s > 0.0))
    throw LaunchUsageError(fail("--join_timeout must be more than 0 seconds."));
  if (cli.app.count("--omp_num_threads") > 0) {
    if (cli.omp_num_threads < 1)
      throw LaunchUsageError(fail("--omp_num_threads must be at least 1, got " +
                                  std::to_string(cli.omp_num_threads) + "."));
    o.omp_num_threads = cli.omp_num_threads;
  }
  if (o.program.empty())
    throw LaunchUsageError(fail("no program given. Name the program to run after the flags, "
                                "e.g. 'paisoar launch --nproc_per_node 2 ./train --epochs 1'."));
}

}  // namespace

std::optional<LaunchOptions> parse_launch_options(int argc, const char* const* argv) {
  LaunchCli cli;
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) args.emplace_back(argv[i]);  // CLI11 wants them reversed
  try {
    cli.app.parse(args);
  } catch (const CLI::CallForHelp&) {
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    throw LaunchUsageError(fail(std::string(e.what()) + "."));
  }
  LaunchOptions o = std::move(cli.options);
  std::vector<std::string> rest = cli.app.remaining();
  if (!rest.empty() && rest.front() == "--") {
    rest.erase(rest.begin());
  } else if (!rest.empty() && rest.front().size() > 1 && rest.front()[0] == '-') {
    throw LaunchUsageError(fail("unknown option '" + rest.front() +
                                "'. To run a program whose name starts with '-', put '--' "
                                "before it."));
  }
  o.program = std::move(rest);
  if (cli.standalone) {
    if (cli.app.count("--nnodes") > 0 && o.nnodes != 1)
      throw LaunchUsageError(fail("--standalone means a single node; drop --nnodes."));
    o.nnodes = 1;
    o.node_rank = 0;
    o.master_addr = "127.0.0.1";
    o.master_port = 0;
  }
  validate(o, cli);
  return o;
}

std::string launch_help_text() {
  LaunchCli cli;
  return cli.app.help();
}

}  // namespace paisoar::launch
