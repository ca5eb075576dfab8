// RunEnvironment::from_env: the job layout and the launcher's heartbeat file.
#include "paisoar/train/run_environment.h"

namespace paisoar::train {

RunEnvironment RunEnvironment::from_env(const comm::EnvMap& env) {
  RunEnvironment run;
  run.job = comm::rank_info_from_env(env);
  if (auto it = env.find("PAISOAR_HEARTBEAT_FILE"); it != env.end()) run.heartbeat_file = it->second;
  return run;
}

}  // namespace paisoar::train
