// Where this process sits in the job, read from the environment set by
// `paisoar launch`/torchrun, Slurm's srun, or Open MPI's mpirun.
#pragma once

#include <map>
#include <string>

#include "paisoar/comm/types.h"

namespace paisoar::comm {

struct RankInfo {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string source;  // "torchrun", "slurm", "openmpi" or "default" (no variables set)
  // The rendezvous store `paisoar launch` hosts (PAISOAR_STORE_ADDR,
  // PAISOAR_STORE_PORT; 0: none, then rank 0 hosts a store at the master),
  // the job token that store asks for (PAISOAR_JOB_TOKEN) and the launcher's
  // attempt number (PAISOAR_RESTART_COUNT, else TORCHELASTIC_RESTART_COUNT).
  std::string store_addr;
  int store_port = 0;
  std::string job_token;
  int restart_count = 0;
};

using EnvMap = std::map<std::string, std::string>;

// Reads torchrun's variables first (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT), then Slurm's (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
// SLURM_NTASKS_PER_NODE, first host of SLURM_JOB_NODELIST), then Open MPI's
// (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE). MASTER_ADDR/MASTER_PORT override
// the derived master for Slurm and Open MPI. With none set: a single rank.
// PAISOAR_STORE_PORT (set by `paisoar launch`) names the launcher's store;
// PAISOAR_JOB_TOKEN must be set with it.
// Throws c10::ValueError naming the variable when one is malformed or missing.
RankInfo rank_info_from_env(const EnvMap& env);
// The same over the process environment.
RankInfo rank_info_from_env();
// The process environment, read once: the edge passes this map (or what is
// parsed from it) down; nothing below the apps and the Trainer's
// construction reads the environment itself.
EnvMap process_env();

// `options` with what the environment overrides: PAISOAR_CHECK_COLLECTIVES
// (1: on), PAISOAR_SEGMENT_BYTES, GLOO_SOCKET_IFNAME, PAISOAR_COMM_BACKEND
// (auto, gloo, nccl or shm: force one, for comparison). Throws
// c10::ValueError naming the variable when one is malformed.
CommOptions comm_options_from_env(const EnvMap& env, CommOptions options);

}  // namespace paisoar::comm
