// RunEnvironment::from_env: the job layout, the launcher's heartbeat file, the planner's cache and CPUs.
#include "paisoar/train/run_environment.h"

#include "paisoar/plan/planner.h"

namespace paisoar::train {

RunEnvironment RunEnvironment::from_env(const comm::EnvMap& env) {
  RunEnvironment run;
  run.job = comm::rank_info_from_env(env);
  if (auto it = env.find("PAISOAR_HEARTBEAT_FILE"); it != env.end()) run.heartbeat_file = it->second;
  run.plan_cache = plan::default_cache_path(env);
  run.node_cpus = plan::node_cpus_from_env(env);
  return run;
}

}  // namespace paisoar::train
