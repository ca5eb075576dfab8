// The environment each rank starts with: the launcher's own environment plus
// torchrun's variables (RANK, WORLD_SIZE, MASTER_ADDR, ...). Pure functions,
// so the rules are testable without starting processes.
#pragma once

#include <string>
#include <vector>

#include "launch/launch_options.h"

namespace paisoar::launch {

// What changes between the ranks and attempts of one launcher run.
struct RankEnvContext {
  int local_rank = 0;
  // 0 for the first attempt, k for the k-th restart of the group.
  int restart_count = 0;
  // TORCHELASTIC_RUN_ID: chosen once per launcher run (make_run_id()).
  std::string run_id;
  // Cores this launcher may use; the OMP_NUM_THREADS default is cpus / nproc_per_node.
  int cpu_count = 1;
  // PAISOAR_NODE_CPUS: the CPUs this launcher may run on (cpulist text,
  // "0-7"), which its ranks share; a rank bound to its own cores measures
  // on them when it plans (`parallel: auto`). "" sets nothing.
  std::string node_cpus;
  // PAISOAR_JOB_TOKEN for the ranks (see job_token.h); "" leaves base's.
  std::string job_token;
  // TORCHELASTIC_ERROR_FILE: where this rank's torch `@record` writes its
  // error; "" leaves base's.
  std::string error_file;
};

// RANK of local rank `local_rank` on this node: node_rank * nproc_per_node + local_rank.
int global_rank(const LaunchOptions& options, int local_rank);

// Returns `base` ("NAME=value" entries, e.g. current_environment()) with the
// rank variables torchrun 2.x sets (and paisoar's), replacing any of the
// same name. OMP_NUM_THREADS comes from options.omp_num_threads, else from
// `base` when set there, else max(1, cpu_count / nproc_per_node);
// TORCH_NCCL_ASYNC_ERROR_HANDLING from `base`, else 1, as torchrun. The
// launcher's store is at PAISOAR_STORE_ADDR:PAISOAR_STORE_PORT =
// master_addr:master_port; MASTER_PORT is master_port + 1, for a store a
// rank hosts itself (torch.distributed's env://, a user's own TCPStore), so
// TORCHELASTIC_USE_AGENT_STORE is False: torch's env:// must not expect the
// launcher to host a store there (its own asks for the job token, which
// env:// cannot show). options.master_port must be the real port, not 0.
std::vector<std::string> build_rank_env(const LaunchOptions& options, const RankEnvContext& ctx,
                                        const std::vector<std::string>& base);

// The launcher's environment as "NAME=value" entries.
std::vector<std::string> current_environment();

// Cores this process may run on (its CPU affinity), at least 1.
int available_cpus();

// A random 16-hex-digit id for TORCHELASTIC_RUN_ID.
std::string make_run_id();

}  // namespace paisoar::launch
