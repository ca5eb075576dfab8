// launch_main(): parses the flags, starts the rendezvous store (node 0), then
// runs attempts of the rank group through the Supervisor, restarting the
// whole group after a failure while --max_restarts allows, and turns the
// outcome into the exit code. With several nodes the attempts are the job's
// generations, joined and ended together through node 0's store (NodeLink).
#include "launch/launch.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <iostream>
#include <memory>
#include <optional>

#include "launch/free_port.h"
#include "launch/job_token.h"
#include "launch/launch_options.h"
#include "launch/node_link.h"
#include "launch/output_relay.h"
#include "launch/python_check.h"
#include "launch/rank_command.h"
#include "launch/rank_env.h"
#include "launch/rank_log_files.h"
#include "launch/rank_scratch_dir.h"
#include "launch/signal_channel.h"
#include "launch/rendezvous/store_server.h"
#include "launch/supervisor.h"

namespace paisoar {
namespace {

using namespace paisoar::launch;

void message(const std::string& text) { write_launcher_message(STDERR_FILENO, text); }

// Keeps the ranks' pipes from landing on fd 0-2 when the launcher was
// started with one of them closed.
void ensure_standard_fds_open() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) ::open("/dev/null", O_RDWR);
  }
}

// The launcher holds two pipes per rank, a log file per rank with --log_dir
// and, on node 0, a store connection per rank of the job: refused up front,
// rather than starting some ranks and failing at the next with "Too many
// open files".
void check_open_file_limit(const LaunchOptions& options) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  const long long needed = 32 + 2LL * options.nproc_per_node +
                           (options.log_dir.empty() ? 0 : options.nproc_per_node) +
                           (options.node_rank == 0 ? options.world_size() : 0);
  if (needed <= static_cast<long long>(limit.rlim_cur)) return;
  throw LaunchUsageError("paisoar launch: --nproc_per_node " + std::to_string(options.nproc_per_node) +
                         " needs about " + std::to_string(needed) +
                         " open files in the launcher, more than its limit of " +
                         std::to_string(limit.rlim_cur) + " (ulimit -n). Raise the limit (e.g. "
                         "ulimit -n " + std::to_string(needed) + ") or start fewer ranks per node.");
}

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

std::vector<RankSpec> make_specs(const LaunchOptions& options, const std::vector<std::string>& argv,
                                 RankEnvContext ctx, const std::vector<std::string>& base_env,
                                 const RankScratchDir& scratch, const CorePlacement& placement) {
  std::vector<RankSpec> specs;
  for (int local = 0; local < options.nproc_per_node; ++local) {
    ctx.local_rank = local;
    const int rank = global_rank(options, local);
    // A new attempt starts without the last attempt's heartbeat and error files.
    ctx.error_file = scratch.fresh_file(rank, "error.json");
    RankSpec spec{local, rank, argv, build_rank_env(options, ctx, base_env), "", ctx.error_file};
    spec.stdout_on_console = options.on_console(local, kStdOut);
    spec.stderr_on_console = options.on_console(local, kStdErr);
    if (placement.bound()) spec.cpus = placement.cpus_of_rank[local];
    if (options.heartbeat_timeout_s > 0) {
      spec.heartbeat_file = scratch.fresh_file(rank, "heartbeat");
      const std::string name = "PAISOAR_HEARTBEAT_FILE=";
      spec.env.erase(std::remove_if(spec.env.begin(), spec.env.end(),
                                    [&](const std::string& e) { return e.compare(0, name.size(), name) == 0; }),
                     spec.env.end());
      spec.env.push_back(name + spec.heartbeat_file);
    }
    if (options.hang_timeout_s > 0) {
      spec.flight_record = scratch.fresh_file(rank, "flight");
      const std::string name = "PAISOAR_FLIGHT_RECORD=";
      spec.env.erase(std::remove_if(spec.env.begin(), spec.env.end(),
                                    [&](const std::string& e) { return e.compare(0, name.size(), name) == 0; }),
                     spec.env.end());
      spec.env.push_back(name + spec.flight_record);
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

// The program (or the Python that runs it) could not be started: what to do.
int spawn_failure_exit(const LaunchOptions& options, const SpawnError& error,
                       const std::vector<std::string>& argv, const PythonInterpreter& python) {
  const std::string& program = argv.front();
  const int code = error.error_code();
  if (runs_under_python(options.program, options.python_mode)) {
    message("'" + options.program.front() + "' runs under Python '" + program + "' (" +
            python.source + "), which cannot be started. Set PAISOAR_PYTHON to the Python "
            "interpreter of the environment where torch and paisoar are installed, e.g. "
            "PAISOAR_PYTHON=/path/to/venv/bin/python.");
  } else if (code == ENOENT && program.find('/') == std::string::npos) {
    message("'" + program + "' was not found in PATH: give its path (e.g. ./" + program +
            "), or add its directory to PATH.");
  } else if (code == ENOENT) {
    message("'" + program + "' does not exist: check the program's path.");
  } else if (std::filesystem::is_directory(program)) {
    message("'" + program + "' is a directory, not a program.");
  } else if (code == EACCES) {
    message("'" + program + "' is not executable: make it so (chmod +x " + program +
            "), or name its interpreter first (e.g. paisoar launch bash " + program + ").");
  }
  return code == ENOENT ? 127 : 126;
}

// On node 0: the job's rendezvous store on --master_addr:--master_port. With
// --master_port 0 the kernel picks the store's port P, and P is kept only when
// P + 1 (the ranks' MASTER_PORT, for stores they host themselves) is free
// too; options.master_port becomes P.
std::unique_ptr<StoreServer> start_rendezvous_store(LaunchOptions& options,
                                                    const std::string& token) {
  StoreServerOptions store;
  store.host = options.master_addr;
  store.port = options.master_port;
  store.token = token;
  store.log_fd = STDERR_FILENO;
  if (options.master_port != 0) return std::make_unique<StoreServer>(store);
  constexpr int kTries = 50;
  for (int i = 0; i < kTries; ++i) {
    auto server = std::make_unique<StoreServer>(store);
    if (server->port() < 65535 && port_is_free(options.master_addr, server->port() + 1)) {
      options.master_port = server->port();
      return server;
    }
  }
  throw std::runtime_error("paisoar launch: found no free port P on --master_addr '" +
                           options.master_addr + "' with P + 1 free too, in " +
                           std::to_string(kTries) + " tries; give --master_port.");
}

// What every attempt of this node's ranks shares.
struct NodeRun {
  const LaunchOptions& options;
  const std::vector<std::string>& argv;
  const PythonInterpreter& python;  // used when the program runs under Python
  const std::vector<std::string>& base_env;
  const RankScratchDir& scratch;
  const CorePlacement& placement;
  RankEnvContext ctx;
  Supervisor& supervisor;
  SignalChannel& signals;
  bool torch_looked_for = false;

  std::vector<RankSpec> specs(int restart) {
    ctx.restart_count = restart;
    return make_specs(options, argv, ctx, base_env, scratch, placement);
  }

  int spawn_failure(const SpawnError& error) const {
    return spawn_failure_exit(options, error, argv, python);
  }

  // After a rank failed, once per launcher run: ranks under a Python that
  // finds no torch die with "No module named 'torch'", which does not say
  // which Python it was; this says, and what to do.
  void explain_rank_failure() {
    if (torch_looked_for || !runs_under_python(options.program, options.python_mode)) return;
    torch_looked_for = true;
    if (look_for_torch(argv.front(), base_env) == TorchLookup::kMissing)
      message(missing_torch_message(python, built_with_python()));
  }
};

int failed_rank_exit(const GroupOutcome& outcome) {
  const ExitStatus& status = outcome.failure->status;
  return status.signal == 0 && status.code != 0 ? status.code : 1;
}

int run_single_node(NodeRun& run) {
  const LaunchOptions& options = run.options;
  for (int restart = 0;; ++restart) {
    GroupOutcome outcome = run.supervisor.run(run.specs(restart));
    switch (outcome.kind) {
      case GroupOutcome::Kind::kSucceeded:
        return 0;
      case GroupOutcome::Kind::kInterrupted:
        return 128 + outcome.signal;
      case GroupOutcome::Kind::kSpawnFailed:
        return run.spawn_failure(*outcome.spawn_error);
      case GroupOutcome::Kind::kRankFailed:
        run.explain_rank_failure();
        break;
      case GroupOutcome::Kind::kStoppedByJob:  // not without a JobEvents
      case GroupOutcome::Kind::kJobLost:
        break;
    }
    if (restart < options.max_restarts) {
      message("restarting the group (restart " + std::to_string(restart + 1) + " of " +
              std::to_string(options.max_restarts) + ")");
      continue;
    }
    if (options.max_restarts > 0)
      message("giving up: the group failed after all " + std::to_string(options.max_restarts) +
              " restarts");
    return failed_rank_exit(outcome);
  }
}

// Ends the job on every node, as well as a lost store allows.
void end_job(NodeLink& link, const std::string& why) {
  try {
    link.end_job(why);
  } catch (const StoreConnectionLost&) {
  }
}

// Several nodes: generation g of the job runs this node's ranks with restart
// count g once every node joined it; a failure anywhere stops every node's
// ranks, and all rejoin g + 1 while --max_restarts allows (node_link.h).
int run_node_of_job(NodeRun& run, const std::string& token) {
  const LaunchOptions& options = run.options;
  const std::string node = "node " + std::to_string(options.node_rank);
  NodeLinkOptions link_options;
  link_options.host = options.master_addr;
  link_options.port = options.master_port;
  link_options.token = token;
  link_options.node_rank = options.node_rank;
  link_options.nnodes = options.nnodes;
  link_options.join_timeout_s = options.join_timeout_s;
  try {
    NodeLink link(link_options, run.signals);
    // RANK and the restart decisions are only right when every node has the
    // same; torchrun's TORCHELASTIC_RUN_ID is the same on every node.
    std::string flags = "--nnodes " + std::to_string(options.nnodes) + " --nproc_per_node " +
                        std::to_string(options.nproc_per_node) + " --max_restarts " +
                        std::to_string(options.max_restarts);
    if (!options.run_id.empty()) flags += " --rdzv-id " + options.run_id;
    const std::string job_flags = link.first_value("flags", flags);
    if (job_flags != flags) {
      throw std::runtime_error("paisoar launch: this launcher (" + node + ") has " + flags +
                               ", but the job's first launcher had " + job_flags +
                               "; give every node the same flags");
    }
    run.ctx.run_id = link.first_value("run_id", run.ctx.run_id);
    for (int generation = 0;; ++generation) {
      JobVerdict verdict = link.join(generation);
      std::optional<GroupOutcome> local_failure;
      if (verdict.kind == JobVerdict::Kind::kGo) {
        GroupOutcome outcome = run.supervisor.run(run.specs(generation), &link);
        switch (outcome.kind) {
          case GroupOutcome::Kind::kSucceeded:
            verdict = link.finish();
            if (verdict.kind == JobVerdict::Kind::kRestart)
              message(verdict.reason + " (this node's ranks had finished)");
            break;
          case GroupOutcome::Kind::kInterrupted:
            end_job(link, node + "'s launcher got " + signal_name(outcome.signal));
            return 128 + outcome.signal;
          case GroupOutcome::Kind::kSpawnFailed:
            end_job(link, node + " could not start its program: " + outcome.spawn_error->what());
            return run.spawn_failure(*outcome.spawn_error);
          case GroupOutcome::Kind::kJobLost:
            return 1;  // the supervisor said why
          case GroupOutcome::Kind::kRankFailed:
            run.explain_rank_failure();
            local_failure = outcome;
            verdict = link.verdict();
            break;
          case GroupOutcome::Kind::kStoppedByJob:
            verdict = link.verdict();
            break;
        }
      }
      switch (verdict.kind) {
        case JobVerdict::Kind::kDone:
          return 0;
        case JobVerdict::Kind::kInterrupted:
          return 128 + verdict.signal;
        case JobVerdict::Kind::kEnd:
          message("ending the job: " + verdict.reason);
          return 1;
        case JobVerdict::Kind::kGo:  // not a verdict on a generation that ran
        case JobVerdict::Kind::kRestart:
          break;
      }
      if (generation < options.max_restarts) {
        message("restarting the job on all " + std::to_string(options.nnodes) + " nodes (restart " +
                std::to_string(generation + 1) + " of " + std::to_string(options.max_restarts) + ")");
        continue;
      }
      if (options.max_restarts > 0)
        message("giving up: the job failed after all " + std::to_string(options.max_restarts) + " restarts");
      return local_failure ? failed_rank_exit(*local_failure) : 1;
    }
  } catch (const StoreConnectionLost& e) {
    message(std::string("lost the connection to node 0's launcher, which hosts the job's store: ") + e.what());
    return 1;
  }
}

// Node 0 of several: the other launchers read the job's verdict from this
// launcher's store, so it stays up (at most `timeout_s`, or until a signal)
// until they have all disconnected.
void wait_for_other_launchers(const StoreServer& store, SignalChannel& signals, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_s));
  while (store.open_connections() > 0 && std::chrono::steady_clock::now() < deadline) {
    pollfd p{signals.fd(), POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    for (int sig : signals.drain()) {
      if (sig != SIGCHLD) return;
    }
  }
}

int run_launcher(LaunchOptions options, const std::string& token) {
  const PythonInterpreter python = python_interpreter(
      env_or_empty("PAISOAR_PYTHON"), env_or_empty("PYTHON_EXEC"), built_with_python());
  const std::vector<std::string> argv = rank_command(options.program, options.python_mode, python.path);
  if (options.wants_log_files() && options.log_dir.empty()) {
    options.log_dir = make_temporary_log_dir();
    message("--redirects/--tee without --log-dir: the ranks' output files are in " +
            options.log_dir);
  }

  check_open_file_limit(options);

  std::vector<int> global_ranks;
  for (int local = 0; local < options.nproc_per_node; ++local)
    global_ranks.push_back(global_rank(options, local));
  RankLogFiles logs =
      options.log_dir.empty() ? RankLogFiles() : RankLogFiles(options.log_dir, global_ranks);

  SignalChannel signals;
  SupervisorOptions supervision;
  supervision.grace_period_s = options.grace_period_s;
  supervision.prefix_output = options.prefix_output;
  supervision.heartbeat_timeout_s = options.heartbeat_timeout_s;
  supervision.hang_timeout_s = options.hang_timeout_s;
  const RankScratchDir scratch;
  Supervisor supervisor(supervision, signals, logs);
  // After `signals`: the store's thread blocks every signal itself, and the
  // store lives across restarts (ranks of attempt k use keys of their own).
  const std::unique_ptr<StoreServer> store =
      options.node_rank == 0 ? start_rendezvous_store(options, token) : nullptr;

  RankEnvContext ctx;
  ctx.job_token = token;
  ctx.run_id = options.run_id.empty() ? make_run_id() : options.run_id;
  ctx.cpu_count = available_cpus();
  const std::vector<std::string> base_env = current_environment();
  const CpuTopology topology = read_cpu_topology();
  std::vector<int> node_cpus;
  for (const LogicalCpu& cpu : topology.cpus) node_cpus.push_back(cpu.id);
  ctx.node_cpus = cpu_list_text(node_cpus);
  const BindTo bind = bind_for_program(options.bind_to, runs_under_python(options.program, options.python_mode));
  CorePlacement placement = place_ranks_on_cores(topology, options.nproc_per_node, bind);
  if (options.bind_to == BindTo::kAuto && bind == BindTo::kNone)
    placement.why_unbound = "the program runs under Python (--bind_to auto, as torchrun; --bind_to core binds it)";
  if (options.report_bindings) {
    for (const std::string& line : describe_placement(placement, topology, global_rank(options, 0)))
      message(line);
  }
  NodeRun run{options, argv, python, base_env, scratch, placement, ctx, supervisor, signals};
  if (options.nnodes == 1) return run_single_node(run);
  const int code = run_node_of_job(run, token);
  if (store) wait_for_other_launchers(*store, signals, options.grace_period_s + 10);
  return code;
}

}  // namespace

int launch_main(int argc, char** argv) {
  std::optional<LaunchOptions> options;
  try {
    options = parse_launch_options(argc, argv, read_node_devices());
  } catch (const LaunchUsageError& e) {
    std::cerr << e.what() << std::endl;
    return 2;
  }
  if (!options) {
    std::cout << launch_help_text() << std::flush;
    return 0;
  }
  ensure_standard_fds_open();
  try {
    const std::string token = resolve_job_token(*options, env_or_empty(kJobTokenVar));
    return run_launcher(std::move(*options), token);
  } catch (const LaunchUsageError& e) {
    std::cerr << e.what() << std::endl;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << e.what() << std::endl;
    return 1;
  }
}

}  // namespace paisoar
