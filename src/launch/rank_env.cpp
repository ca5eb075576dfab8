// Builds each rank's environment from the launcher's, the options and the
// attempt number; also the small facts it needs (cores, run id).
#include "util/cpu_count.h"
#include "launch/rank_env.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <thread>
#include <utility>

extern char** environ;

namespace paisoar::launch {
namespace {

std::string name_of(const std::string& entry) { return entry.substr(0, entry.find('=')); }

// Sets NAME=value in `env`, replacing an existing NAME in place.
void set_var(std::vector<std::string>& env, const std::string& name, const std::string& value) {
  std::string entry = name + "=" + value;
  for (std::string& e : env) {
    if (name_of(e) == name) {
      e = std::move(entry);
      return;
    }
  }
  env.push_back(std::move(entry));
}

bool has_var(const std::vector<std::string>& env, const std::string& name) {
  return std::any_of(env.begin(), env.end(),
                     [&](const std::string& e) { return name_of(e) == name; });
}

}  // namespace

int global_rank(const LaunchOptions& options, int local_rank) {
  return options.node_rank * options.nproc_per_node + local_rank;
}

std::vector<std::string> build_rank_env(const LaunchOptions& options, const RankEnvContext& ctx,
                                        const std::vector<std::string>& base) {
  std::vector<std::string> env = base;
  const std::string rank = std::to_string(global_rank(options, ctx.local_rank));
  const std::string world = std::to_string(options.world_size());
  const std::string restarts = std::to_string(ctx.restart_count);
  set_var(env, "RANK", rank);
  set_var(env, "LOCAL_RANK", std::to_string(ctx.local_rank));
  set_var(env, "WORLD_SIZE", world);
  set_var(env, "LOCAL_WORLD_SIZE", std::to_string(options.nproc_per_node));
  set_var(env, "GROUP_RANK", std::to_string(options.node_rank));
  set_var(env, "GROUP_WORLD_SIZE", std::to_string(options.nnodes));
  set_var(env, "ROLE_NAME", options.role);
  set_var(env, "ROLE_RANK", rank);
  set_var(env, "ROLE_WORLD_SIZE", world);
  set_var(env, "MASTER_ADDR", options.master_addr);
  set_var(env, "MASTER_PORT", std::to_string(options.master_port + 1));
  set_var(env, "PAISOAR_STORE_ADDR", options.master_addr);
  set_var(env, "PAISOAR_STORE_PORT", std::to_string(options.master_port));
  if (!ctx.job_token.empty()) set_var(env, "PAISOAR_JOB_TOKEN", ctx.job_token);
  set_var(env, "TORCHELASTIC_RESTART_COUNT", restarts);
  set_var(env, "TORCHELASTIC_MAX_RESTARTS", std::to_string(options.max_restarts));
  set_var(env, "TORCHELASTIC_RUN_ID", ctx.run_id);
  set_var(env, "TORCHELASTIC_USE_AGENT_STORE", "False");
  if (!ctx.error_file.empty()) set_var(env, "TORCHELASTIC_ERROR_FILE", ctx.error_file);
  if (!has_var(env, "TORCH_NCCL_ASYNC_ERROR_HANDLING"))
    set_var(env, "TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
  set_var(env, "PAISOAR_RESTART_COUNT", restarts);
  if (!ctx.node_cpus.empty()) set_var(env, "PAISOAR_NODE_CPUS", ctx.node_cpus);
  if (options.omp_num_threads) {
    set_var(env, "OMP_NUM_THREADS", std::to_string(*options.omp_num_threads));
  } else if (!has_var(env, "OMP_NUM_THREADS")) {
    set_var(env, "OMP_NUM_THREADS",
            std::to_string(std::max(1, ctx.cpu_count / options.nproc_per_node)));
  }
  return env;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

int available_cpus() { return util::usable_cpus(); }

std::string make_run_id() {
  std::random_device device;
  std::uniform_int_distribution<unsigned long long> dist;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", dist(device));
  return buf;
}

}  // namespace paisoar::launch
