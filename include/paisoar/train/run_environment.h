// RunEnvironment: what the process environment says about this run, read
// once at the edge (the app, or a test) and passed down to the Trainer. Below
// it nothing reads the environment (tests/cmake/environment_at_the_edge.cmake).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "paisoar/comm/env.h"
#include "paisoar/format/file_system.h"

namespace paisoar::train {

struct RunEnvironment {
  // Where this rank sits in the job (LOCAL_WORLD_SIZE and the like); the
  // default is a single rank.
  comm::RankInfo job;
  // The file `paisoar launch --heartbeat_timeout` watches (PAISOAR_HEARTBEAT_FILE);
  // empty: no heartbeat.
  std::string heartbeat_file;
  // The file system the checkpoints (checkpoint.dir) are written to and read
  // from; null: the local disk. Tests give an in-memory or failing one.
  std::shared_ptr<format::FileSystem> checkpoint_files;
  // Where `parallel: auto` keeps the planner's measurements
  // (plan::default_cache_path of the environment); "": nowhere.
  std::string plan_cache;
  // The CPUs this node's ranks share (PAISOAR_NODE_CPUS from `paisoar
  // launch`), where `parallel: auto` measures; empty: rank 0's own mask.
  std::vector<int> node_cpus;
  // The run only reads checkpoint.dir (Trainer::reshard): no rank creates,
  // locks or writes it.
  bool checkpoints_read_only = false;

  // Parses `env` (comm::process_env() at the edge). Throws
  // c10::ValueError naming a malformed variable.
  static RunEnvironment from_env(const comm::EnvMap& env);
};

}  // namespace paisoar::train
