// The benchmarks `paisoar bench` runs, by name (compiled only with
// PAISOAR_BUILD_BENCH; bench_commands_none.cpp stands in otherwise).
#include "apps/paisoar-core/commands.h"

namespace paisoar::app {

Command add_bench_comm_command(CLI::App& bench);
Command add_bench_crop_quality_command(CLI::App& bench);
Command add_bench_diagnosis_command(CLI::App& bench);
Command add_bench_gpu_command(CLI::App& bench);
Command add_bench_optim_command(CLI::App& bench);
Command add_bench_amp_command(CLI::App& bench);
Command add_bench_ddp_command(CLI::App& bench);
Command add_bench_ddp_worker_command(CLI::App& bench);
Command add_bench_data_command(CLI::App& bench);
Command add_bench_ladder_command(CLI::App& bench);
Command add_bench_tta_command(CLI::App& bench);
Command add_bench_memory_command(CLI::App& bench);
Command add_bench_recovery_command(CLI::App& bench);
Command add_bench_pipeline_command(CLI::App& bench);
Command add_bench_plan_command(CLI::App& bench);
Command add_bench_zero_memory_worker_command(CLI::App& bench);

std::vector<BenchCommand> bench_commands() {
  return {
      {"comm", add_bench_comm_command},
      {"gpu", add_bench_gpu_command},
      {"crop-quality", add_bench_crop_quality_command},
      {"diagnosis", add_bench_diagnosis_command},
      {"optim", add_bench_optim_command},
      {"amp", add_bench_amp_command},
      {"ddp", add_bench_ddp_command},
      {"ddp-worker", add_bench_ddp_worker_command},
      {"data", add_bench_data_command},
      {"ladder", add_bench_ladder_command},
      {"tta", add_bench_tta_command},
      {"memory", add_bench_memory_command},
      {"recovery", add_bench_recovery_command},
      {"pipeline", add_bench_pipeline_command},
      {"plan", add_bench_plan_command},
      {"zero-memory-worker", add_bench_zero_memory_worker_command},
  };
}

}  // namespace paisoar::app
