// launch_main(): parses the flags, then runs attempts of the rank group
// through the Supervisor, restarting the whole group after a failure while
// --max_restarts allows, and turns the outcome into the exit code.
#include "launch/launch.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <exception>
#include <iostream>

#include "launch/free_port.h"
#include "launch/launch_options.h"
#include "launch/output_relay.h"
#include "launch/rank_command.h"
#include "launch/rank_env.h"
#include "launch/rank_log_files.h"
#include "launch/signal_channel.h"
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

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

std::vector<RankSpec> make_specs(const LaunchOptions& options, const std::vector<std::string>& argv,
                                 RankEnvContext ctx, const std::vector<std::string>& base_env) {
  std::vector<RankSpec> specs;
  for (int local = 0; local < options.nproc_per_node; ++local) {
    ctx.local_rank = local;
    specs.push_back(
        RankSpec{local, global_rank(options, local), argv, build_rank_env(options, ctx, base_env)});
  }
  return specs;
}

int spawn_failure_exit(const LaunchOptions& options, const SpawnError& error,
                       const std::vector<std::string>& argv) {
  if (is_python_script(options.program.front())) {
    message("'" + options.program.front() + "' is a Python script, run with '" + argv.front() +
            "'. Set PAISOAR_PYTHON to the Python interpreter to use (one that can import "
            "torch for torch.distributed).");
  } else if (error.error_code() == ENOENT) {
    message("check the program's path; a name without '/' is searched in PATH.");
  }
  return error.error_code() == ENOENT ? 127 : 126;
}

int run_launcher(LaunchOptions options) {
  if (options.master_port == 0) options.master_port = pick_free_port(options.master_addr);
  const std::vector<std::string> argv =
      rank_command(options.program, env_or_empty("PAISOAR_PYTHON"));

  std::vector<int> global_ranks;
  for (int local = 0; local < options.nproc_per_node; ++local)
    global_ranks.push_back(global_rank(options, local));
  RankLogFiles logs =
      options.log_dir.empty() ? RankLogFiles() : RankLogFiles(options.log_dir, global_ranks);

  SignalChannel signals;
  SupervisorOptions supervision;
  supervision.grace_period_s = options.grace_period_s;
  supervision.prefix_output = options.prefix_output;
  Supervisor supervisor(supervision, signals, logs);

  RankEnvContext ctx;
  ctx.run_id = make_run_id();
  ctx.cpu_count = available_cpus();
  const std::vector<std::string> base_env = current_environment();

  for (int restart = 0;; ++restart) {
    ctx.restart_count = restart;
    GroupOutcome outcome = supervisor.run(make_specs(options, argv, ctx, base_env));
    switch (outcome.kind) {
      case GroupOutcome::Kind::kSucceeded:
        return 0;
      case GroupOutcome::Kind::kInterrupted:
        return 128 + outcome.signal;
      case GroupOutcome::Kind::kSpawnFailed:
        return spawn_failure_exit(options, *outcome.spawn_error, argv);
      case GroupOutcome::Kind::kRankFailed:
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
    const ExitStatus& status = outcome.failure->status;
    return status.signal == 0 && status.code != 0 ? status.code : 1;
  }
}

}  // namespace

int launch_main(int argc, char** argv) {
  std::optional<LaunchOptions> options;
  try {
    options = parse_launch_options(argc, argv);
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
    return run_launcher(std::move(*options));
  } catch (const std::exception& e) {
    std::cerr << e.what() << std::endl;
    return 1;
  }
}

}  // namespace paisoar
