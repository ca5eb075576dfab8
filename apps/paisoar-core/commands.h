// The subcommands paisoar-core serves; each registers itself on the CLI11 app
// and returns the callback that runs it.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace paisoar::app {

// Runs the parsed command; gets main's argc/argv to re-run itself under the launcher.
using Command = std::function<int(int argc, char** argv)>;

Command add_demo_command(CLI::App& app);
Command add_train_command(CLI::App& app);
Command add_convert_command(CLI::App& app);
Command add_zero_consolidate_command(CLI::App& app);
Command add_checkpoint_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_plan_command(CLI::App& app);
// `paisoar bench <name>`: the benchmarks, built only with PAISOAR_BUILD_BENCH.
// bench/bench_commands.cpp (compiled only then) returns them; the stub
// bench_commands_none.cpp returns none, and `paisoar bench` then says how to
// build them.
struct BenchCommand {
  const char* name;
  Command (*add)(CLI::App& bench);
};
std::vector<BenchCommand> bench_commands();

// Re-runs this program under `paisoar launch --nproc_per_node nproc` when it
// was not started by a launcher (torchrun, Slurm or Open MPI variables);
// returns only if it was.
void relaunch_unless_launched(int nproc, int argc, char** argv);

// The absolute path of this program (from /proc/self/exe), to run it again.
std::string self_executable();

// argv for `paisoar launch --nproc_per_node nproc --master_port 0 -- command...`,
// with the launcher next to this program.
std::vector<std::string> launch_argv(int nproc, const std::vector<std::string>& command);

}  // namespace paisoar::app
