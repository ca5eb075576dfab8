// Parses and validates the command line of `paisoar launch` with CLI11.
// Flags accept torchrun's underscore spelling and the dash spelling; the
// compound values (--nnodes MIN:MAX, --rdzv-endpoint, --redirects, ...) are
// parsed by flag_values.h and std_spec.h.
#include "launch/launch_options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <map>
#include <memory>

#include "launch/flag_values.h"
#include "launch/rank_command.h"

namespace paisoar::launch {
namespace {

constexpr const char* kHelpHint = " Run 'paisoar launch --help' for the flags.";
// torchrun's default port for --rdzv-endpoint without one (its c10d rendezvous).
constexpr int kDefaultRendezvousPort = 29400;

// " (1 to 4096)" and the like, for the help text.
std::string range_text(int min, int max) {
  return " (" + std::to_string(min) + " to " + std::to_string(max) + ")";
}

// torchrun 2.14 flags that `paisoar launch` does not take, for a clearer
// error than "unknown option".
const char* const kUnsupportedTorchrunFlags[] = {
    "--local-addr", "--logs-specs", "--numa-binding", "--signals-to-handle",
    "--virtual-local-rank", "--event-log-handler", "--log-line-prefix-template",
    "--duplicate-stdout-filters", "--duplicate-stderr-filters", "--print-completion",
    "--use-env", "--max-nodes"};

// CLI11's usage line cannot show the program and its arguments.
class LaunchFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: paisoar launch [OPTIONS] [--] PROGRAM [ARGS...]\n";
  }
};

// Holds the CLI11 app bound to one LaunchOptions. Both the parser and the help
// text come from here, so they cannot drift apart. Values that need parsing
// beyond CLI11's are held as text here and turned into options by parse().
struct LaunchCli {
  CLI::App app{"Starts --nproc-per-node copies of PROGRAM as the ranks of a distributed job\n"
               "(like torchrun), relays their output and supervises them. A PROGRAM ending\n"
               "in .py runs under $PAISOAR_PYTHON (the `paisoar` command of a Python\n"
               "environment sets it to that environment's Python), else $PYTHON_EXEC, else\n"
               "the Python this paisoar was built with" +
                   (built_with_python().empty() ? std::string(" (none)") : " (" + built_with_python() + ")") +
                   ",\nelse the first python3 on PATH.\n",
               "paisoar launch"};
  LaunchOptions options;
  // The numbers as given; apply_numbers() checks each against its range
  // (flag_values.h) and converts it. Defaults are LaunchOptions'.
  std::string nproc = "1";
  std::string nnodes = "1";
  std::string node_rank = std::to_string(options.node_rank);
  std::string master_port = std::to_string(options.master_port);
  std::string max_restarts = std::to_string(options.max_restarts);
  std::string grace_period = seconds_text(options.grace_period_s);
  std::string heartbeat_timeout = seconds_text(options.heartbeat_timeout_s);
  std::string hang_timeout = seconds_text(options.hang_timeout_s);
  std::string join_timeout = seconds_text(options.join_timeout_s);
  std::string monitor_interval = "0.1";
  std::string omp_num_threads;
  std::string rdzv_backend = "static";
  std::string rdzv_endpoint;
  std::string rdzv_conf;
  std::string redirects = "0";
  std::string tee = "0";
  std::string local_ranks_filter;
  std::string start_method = "spawn";
  std::string bind_to = "auto";
  bool standalone = false;
  bool no_python = false;
  bool module = false;
  bool run_path = false;

  LaunchCli() {
    LaunchOptions& o = options;
    app.prefix_command();  // stop at the program: its arguments are not ours
    app.formatter(std::make_shared<LaunchFormatter>());
    app.footer("Each rank gets torchrun's variables (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,\n"
               "GROUP_RANK, GROUP_WORLD_SIZE, ROLE_*, MASTER_ADDR, MASTER_PORT (= --master-port\n"
               "+ 1), TORCHELASTIC_*, OMP_NUM_THREADS, TORCH_NCCL_ASYNC_ERROR_HANDLING), and\n"
               "PAISOAR_STORE_ADDR/PORT and PAISOAR_JOB_TOKEN for the launcher's rendezvous\n"
               "store, which speaks LibTorch 2.x's TCPStore protocol. The job token comes from\n"
               "PAISOAR_JOB_TOKEN (required with --nnodes > 1) or is made up. See docs/LAUNCH.md.");
    app.add_option("--nproc_per_node,--nproc-per-node", nproc,
                   "Ranks to start on this node: a number" + range_text(1, kMaxRanksPerNode) +
                       ", or auto (the GPUs, else the CPUs), cpu, gpu")
        ->type_name("N|auto|cpu|gpu")
        ->capture_default_str();
    app.add_option("--nnodes", nnodes,
                   "Nodes in the job, each running its own launcher: N" + range_text(1, kMaxNodes) +
                       ", or MIN:MAX with MIN = MAX")
        ->type_name("N")
        ->capture_default_str();
    app.add_option("--node_rank,--node-rank", node_rank, "Index of this node, 0..nnodes-1")
        ->type_name("K")
        ->capture_default_str();
    app.add_option("--master_addr,--master-addr", o.master_addr,
                   "Address of node 0, where the launcher hosts the rendezvous store")
        ->capture_default_str();
    app.add_option("--master_port,--master-port", master_port,
                   "Port of the launcher's rendezvous store on node 0" + range_text(0, 65534) +
                       "; 0 picks a free one (single node only)")
        ->type_name("PORT")
        ->capture_default_str();
    app.add_flag("--standalone", standalone,
                 "Single node on 127.0.0.1 with a free port (--nnodes 1 --master-port 0)");
    app.add_option("--rdzv_backend,--rdzv-backend", rdzv_backend,
                   "static or c10d: either way node 0's launcher hosts the store (no etcd)")
        ->capture_default_str();
    app.add_option("--rdzv_endpoint,--rdzv-endpoint", rdzv_endpoint,
                   "HOST[:PORT] of the rendezvous store, instead of --master-addr/--master-port "
                   "(port 29400 when none is given)");
    app.add_option("--rdzv_id,--rdzv-id", o.run_id,
                   "The job's id, TORCHELASTIC_RUN_ID (default: random, shared by all nodes)");
    app.add_option("--rdzv_conf,--rdzv-conf", rdzv_conf,
                   "KEY=VALUE,...: join_timeout=SECONDS is understood (--join-timeout)");
    app.add_option("--max_restarts,--max-restarts", max_restarts,
                   "Restart the whole job (every node's ranks) up to this many times when a "
                   "rank fails" + range_text(0, kMaxRestarts))
        ->type_name("N")
        ->capture_default_str();
    app.add_option("--monitor_interval,--monitor-interval", monitor_interval,
                   "Accepted for torchrun; the launcher reacts to rank exits at once")
        ->type_name("SECONDS");
    app.add_option("--start_method,--start-method", start_method,
                   "Accepted for torchrun (spawn, fork, forkserver); ranks are always new processes");
    app.add_option("--role", o.role, "ROLE_NAME for the ranks")->capture_default_str();
    app.add_flag("-m,--module", module, "Run PROGRAM as a Python module: python -m PROGRAM ARGS...");
    app.add_flag("--no_python,--no-python", no_python,
                 "Run PROGRAM directly, even when it ends in .py");
    app.add_flag("--run_path,--run-path", run_path,
                 "Run PROGRAM under Python whatever its name (wins over --no-python)");
    app.add_option("--log_dir,--log-dir", o.log_dir,
                   "Also write rank R's output, unprefixed, to LOG_DIR/rank_R.log");
    app.add_option("-r,--redirects", redirects,
                   "Keep these streams off the console, in the log files only: 0 none, 1 "
                   "stdout, 2 stderr, 3 both, or per local rank, e.g. 0:3,1:0")
        ->capture_default_str();
    app.add_option("-t,--tee", tee,
                   "Write these streams to the log files as well as the console (as "
                   "--redirects)")
        ->capture_default_str();
    app.add_option("--local_ranks_filter,--local-ranks-filter", local_ranks_filter,
                   "Show only these local ranks' output on the console, e.g. 0,1 (log files "
                   "keep all)");
    app.add_flag_callback("--no_prefix,--no-prefix", [&o] { o.prefix_output = false; },
                          "Relay the ranks' lines without the '[rank<R>]: ' prefix");
    app.add_option("--grace_period,--grace-period,--shutdown_timeout,--shutdown-timeout",
                   grace_period,
                   "Seconds between SIGTERM and SIGKILL when stopping ranks" +
                       range_text(0, static_cast<int>(kMaxSeconds)))
        ->type_name("SECONDS")
        ->capture_default_str();
    app.add_option("--heartbeat_timeout,--heartbeat-timeout", heartbeat_timeout,
                   "Stop and restart the group when a rank has not beaten its heartbeat "
                   "(PAISOAR_HEARTBEAT_FILE) for this many seconds; 0: off" +
                       range_text(0, static_cast<int>(kMaxSeconds)))
        ->type_name("SECONDS")
        ->capture_default_str();
    app.add_option("--hang_timeout,--hang-timeout", hang_timeout,
                   "Name the rank that holds the others up and stop the group as failed when a rank has "
                   "waited this many seconds in a collective another rank did not reach (its flight "
                   "record says what that rank does instead; longer for a checkpoint or an evaluation); "
                   "0: off" +
                       range_text(0, static_cast<int>(kMaxSeconds)))
        ->type_name("SECONDS")
        ->capture_default_str();
    app.add_option("--join_timeout,--join-timeout", join_timeout,
                   "Several nodes: seconds to wait for every node to join the job at its start "
                   "and at each restart; a node missing then ends the job (at most " +
                       std::to_string(static_cast<int>(kMaxSeconds)) + ")")
        ->type_name("SECONDS")
        ->capture_default_str();
    app.add_option("--bind_to,--bind-to", bind_to,
                   "core: bind each rank to cores/nproc whole cores, spread across NUMA nodes, when there "
                   "are at least as many cores (else hardware threads) as ranks, within the launcher's "
                   "affinity mask and cgroup quota (as Open MPI's --bind-to core); none: leave the ranks "
                   "unbound; auto: core, but none for a program run under Python (as torchrun)")
        ->capture_default_str();
    app.add_flag("--report_bindings,--report-bindings", options.report_bindings,
                 "Print the CPUs each rank of this node is bound to (or why none are)");
    app.add_option("--omp_num_threads,--omp-num-threads", omp_num_threads,
                   "OMP_NUM_THREADS for each rank" + range_text(1, kMaxOmpThreads) +
                       "; default: the user's, else cores/nproc")
        ->type_name("N");
  }

  bool given(const char* flag) const { return app.count(flag) > 0; }
};

std::string fail(const std::string& what) { return "paisoar launch: " + what + kHelpHint; }

[[noreturn]] void usage(const std::string& what) { throw LaunchUsageError(fail(what)); }

// `text` as a whole number of flag `flag` within min..max, else a usage error
// naming the flag, the value and the range.
int whole_number(const char* flag, const std::string& text, int min, int max) {
  try {
    return parse_int_in(text, min, max);
  } catch (const std::invalid_argument& e) {
    usage(std::string(flag) + " " + e.what() + ".");
  }
}

// `text` as the seconds of flag `flag` within `range`, else a usage error.
double seconds(const char* flag, const std::string& text, const SecondsRange& range) {
  try {
    return parse_seconds(text, range);
  } catch (const std::invalid_argument& e) {
    usage(std::string(flag) + " " + e.what() + ".");
  }
}

constexpr SecondsRange kPositiveSeconds{0, kMaxSeconds, true, nullptr};

// The plain numeric flags, each against its own range. --nnodes,
// --nproc-per-node and --rdzv-conf's join_timeout are torchrun values
// (apply_torchrun_values); ranges that depend on other flags (--node-rank
// below --nnodes) are validate()'s.
void apply_numbers(const LaunchCli& cli, LaunchOptions& o) {
  o.node_rank = whole_number("--node_rank", cli.node_rank, 0, kMaxNodes - 1);
  if (cli.master_port == "65535")
    usage("--master_port must be a whole number from 0 to 65534, got '65535': the ranks get "
          "MASTER_PORT = --master_port + 1 for stores they host themselves.");
  o.master_port = whole_number("--master_port", cli.master_port, 0, 65534);
  o.max_restarts = whole_number("--max_restarts", cli.max_restarts, 0, kMaxRestarts);
  o.grace_period_s = seconds("--grace_period", cli.grace_period, SecondsRange{});
  o.heartbeat_timeout_s =
      seconds("--heartbeat_timeout", cli.heartbeat_timeout, SecondsRange{0, kMaxSeconds, false, "off"});
  o.hang_timeout_s = seconds("--hang_timeout", cli.hang_timeout, SecondsRange{0, kMaxSeconds, false, "off"});
  o.join_timeout_s = seconds("--join_timeout", cli.join_timeout, kPositiveSeconds);
  seconds("--monitor_interval", cli.monitor_interval, kPositiveSeconds);  // checked, not used
  if (cli.given("--omp_num_threads"))
    o.omp_num_threads = whole_number("--omp_num_threads", cli.omp_num_threads, 1, kMaxOmpThreads);
}

// The unknown option's message; names torchrun flags that are not supported.
std::string unknown_option(const std::string& arg) {
  std::string name = arg.substr(0, arg.find('='));
  std::replace(name.begin(), name.end(), '_', '-');
  for (const char* flag : kUnsupportedTorchrunFlags) {
    if (name == flag)
      return "torchrun's " + name + " is not supported by paisoar launch (see docs/LAUNCH.md, "
             "\"Differences from torchrun\").";
  }
  return "unknown option '" + arg + "'. To run a program whose name starts with '-', put '--' "
         "before it.";
}

void stream_check(const StdSpec& spec, const char* flag, int nproc) {
  for (const auto& [rank, streams] : spec.by_local_rank) {
    if (rank >= nproc)
      usage(std::string(flag) + " names local rank " + std::to_string(rank) +
            ", but --nproc-per-node is " + std::to_string(nproc) + ".");
  }
}

// --nnodes, --nproc-per-node, the rendezvous flags, the output flags and
// the Python flags: torchrun's values into options.
void apply_torchrun_values(LaunchCli& cli, LaunchOptions& o, const NodeDevices& devices) {
  try {
    const NodeRange range = parse_nnodes(cli.nnodes);
    if (range.min_nodes != range.max_nodes)
      usage("--nnodes " + cli.nnodes + ": elastic node ranges are not supported; paisoar launch "
            "runs a fixed number of nodes. Give --nnodes N (or N:N).");
    o.nnodes = range.min_nodes;
  } catch (const std::invalid_argument& e) {
    usage(std::string("--nnodes ") + e.what() + ".");
  }
  std::string why;
  const std::optional<int> nproc = resolve_nproc_per_node(cli.nproc, devices, &why);
  if (!nproc) usage("--nproc_per_node " + why + ".");
  o.nproc_per_node = *nproc;

  if (cli.rdzv_backend != "static" && cli.rdzv_backend != "c10d")
    usage("--rdzv-backend " + cli.rdzv_backend + " is not supported: node 0's launcher hosts the "
          "rendezvous store itself. Use static or c10d, with --rdzv-endpoint NODE0_ADDR:PORT.");
  // torchrun writes an IPv6 --master-addr in brackets, e.g. [::1].
  if (o.master_addr.size() > 2 && o.master_addr.front() == '[' && o.master_addr.back() == ']')
    o.master_addr = o.master_addr.substr(1, o.master_addr.size() - 2);
  if (!cli.rdzv_endpoint.empty()) {
    Endpoint e;
    try {
      e = parse_endpoint(cli.rdzv_endpoint, kDefaultRendezvousPort);
    } catch (const std::invalid_argument& err) {
      usage(std::string("--rdzv-endpoint ") + err.what() + ".");
    }
    if ((cli.given("--master_addr") && o.master_addr != e.host) ||
        (cli.given("--master_port") && o.master_port != e.port))
      usage("--rdzv-endpoint " + cli.rdzv_endpoint + " and --master-addr/--master-port name "
            "different stores; give one of them.");
    o.master_addr = e.host;
    o.master_port = e.port;
  }
  if (cli.rdzv_backend == "c10d" && o.nnodes > 1 && !cli.given("--node_rank"))
    usage("--rdzv-backend c10d with --nnodes " + std::to_string(o.nnodes) + " needs --node-rank: "
          "paisoar launch does not hand out node ranks; give each node its own 0.." +
          std::to_string(o.nnodes - 1) + ".");
  std::map<std::string, std::string> conf;
  try {
    conf = parse_key_values(cli.rdzv_conf);
  } catch (const std::invalid_argument& e) {
    usage(std::string("--rdzv-conf ") + e.what() + ".");
  }
  for (const auto& [key, value] : conf) {
    if (key != "join_timeout")
      usage("--rdzv-conf " + key + " is not understood; paisoar launch takes join_timeout only.");
    if (cli.given("--join_timeout"))
      usage("--rdzv-conf join_timeout and --join-timeout both given; give one.");
    o.join_timeout_s = seconds("--rdzv-conf join_timeout", value, kPositiveSeconds);
  }

  try {
    o.redirects = parse_std_spec(cli.redirects);
  } catch (const std::invalid_argument& e) {
    usage(std::string("--redirects ") + e.what() + ".");
  }
  try {
    o.tee = parse_std_spec(cli.tee);
  } catch (const std::invalid_argument& e) {
    usage(std::string("--tee ") + e.what() + ".");
  }
  stream_check(o.redirects, "--redirects", o.nproc_per_node);
  stream_check(o.tee, "--tee", o.nproc_per_node);
  if (cli.given("--local_ranks_filter")) {
    try {
      o.local_ranks_filter = parse_rank_list(cli.local_ranks_filter);
    } catch (const std::invalid_argument& e) {
      usage(std::string("--local-ranks-filter must be a comma-separated list of local ranks, "
                        "e.g. 0,1: ") + e.what() + ".");
    }
    if (*o.local_ranks_filter.rbegin() >= o.nproc_per_node)
      usage("--local-ranks-filter names local rank " + std::to_string(*o.local_ranks_filter.rbegin()) +
            ", but --nproc-per-node is " + std::to_string(o.nproc_per_node) + ".");
  }

  if (cli.module && cli.no_python)
    usage("--module and --no-python contradict each other: a module runs under Python.");
  if (cli.module && cli.run_path) usage("--module and --run-path: give one of them.");
  if (cli.run_path) {
    o.python_mode = PythonMode::kScript;
  } else if (cli.module) {
    o.python_mode = PythonMode::kModule;
  } else if (cli.no_python) {
    o.python_mode = PythonMode::kNever;
  }
  if (cli.bind_to == "auto") {
    o.bind_to = BindTo::kAuto;
  } else if (cli.bind_to == "core") {
    o.bind_to = BindTo::kCore;
  } else if (cli.bind_to == "none") {
    o.bind_to = BindTo::kNone;
  } else {
    usage("--bind_to must be auto, core or none, got '" + cli.bind_to + "'.");
  }
  if (cli.start_method != "spawn" && cli.start_method != "fork" && cli.start_method != "forkserver")
    usage("--start-method must be spawn, fork or forkserver, got '" + cli.start_method + "'.");
}

// What holds between flags, once each is within its own range.
void validate(LaunchOptions& o, const LaunchCli& cli) {
  if (o.node_rank >= o.nnodes)
    usage("--node_rank must be a whole number from 0 to " + std::to_string(o.nnodes - 1) +
          " for --nnodes " + std::to_string(o.nnodes) + ", got '" + cli.node_rank + "'.");
  if (o.master_port == 65535)  // from --rdzv-endpoint
    usage("--rdzv-endpoint's port must be from 0 to 65534, got 65535: the ranks get "
          "MASTER_PORT = --master_port + 1 for stores they host themselves.");
  if (o.master_port == 0 && o.nnodes > 1)
    usage("--master_port 0 (pick a free port) only works with --nnodes 1: the other nodes could "
          "not know the port. Give every node the same explicit --master_port.");
  if (o.master_addr.empty()) usage("--master_addr must not be empty.");
  if (cli.given("--rdzv_id") && o.run_id.empty()) usage("--rdzv-id must not be empty.");
  if (o.program.empty())
    usage("no program given. Name the program to run after the flags, e.g. 'paisoar launch "
          "--nproc_per_node 2 ./train --epochs 1'.");
}

}  // namespace

bool LaunchOptions::on_console(int local_rank, int stream) const {
  if ((redirects.streams_of(local_rank) & stream) != 0) return false;
  return local_ranks_filter.empty() || local_ranks_filter.count(local_rank) > 0;
}

std::optional<LaunchOptions> parse_launch_options(int argc, const char* const* argv,
                                                  const NodeDevices& devices) {
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
  std::vector<std::string> rest = cli.app.remaining();
  if (!rest.empty() && rest.front() == "--") {
    rest.erase(rest.begin());
  } else if (!rest.empty() && rest.front().size() > 1 && rest.front()[0] == '-') {
    usage(unknown_option(rest.front()));
  }
  LaunchOptions& o = cli.options;
  o.program = std::move(rest);
  if (cli.standalone) {
    if (cli.given("--nnodes") && cli.nnodes != "1" && cli.nnodes != "1:1")
      usage("--standalone means a single node; drop --nnodes.");
    cli.nnodes = "1";
    cli.rdzv_endpoint.clear();  // torchrun ignores the rendezvous flags with --standalone
    cli.rdzv_backend = "static";
  }
  apply_numbers(cli, o);
  apply_torchrun_values(cli, o, devices);
  if (cli.standalone) {
    o.node_rank = 0;
    o.master_addr = "127.0.0.1";
    o.master_port = 0;
  }
  validate(o, cli);
  return std::move(cli.options);
}

std::string launch_help_text() {
  LaunchCli cli;
  return cli.app.help();
}

}  // namespace paisoar::launch
