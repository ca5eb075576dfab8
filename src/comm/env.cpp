// rank_info_from_env: the job layout from torchrun/`paisoar launch`, Slurm or
// Open MPI variables, validated with errors that name the variable;
// comm_options_from_env: the CommOptions the environment overrides.
#include "paisoar/comm/env.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <stdexcept>

#include "src/comm/flight_recorder.h"

extern char** environ;

namespace paisoar::comm {
namespace {

const std::string* find(const EnvMap& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

int parse_int(const EnvMap& env, const std::string& key) {
  const std::string* value = find(env, key);
  if (!value) {
    C10_THROW_ERROR(ValueError, "environment variable " + key +
                                " is missing: start the program with `paisoar launch` "
                                "(or set it yourself)");
  }
  size_t used = 0;
  long parsed = 0;
  try {
    parsed = std::stol(*value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value->size() || parsed < 0 || parsed > 1 << 24) {
    C10_THROW_ERROR(ValueError, "environment variable " + key + "='" + *value +
                                "' is not a non-negative integer");
  }
  return static_cast<int>(parsed);
}

int parse_int_or(const EnvMap& env, const std::string& key, int fallback) {
  return find(env, key) ? parse_int(env, key) : fallback;
}

// "node[01-04,07]" -> "node01"; "a,b" -> "a".
std::string first_slurm_host(const std::string& list) {
  size_t open = list.find('[');
  size_t comma = list.find(',');
  if (open == std::string::npos || (comma != std::string::npos && comma < open)) {
    return list.substr(0, comma);
  }
  size_t close = list.find(']', open);
  size_t end = list.find_first_of(",-]", open + 1);
  std::string suffix;
  if (close != std::string::npos) {
    size_t after = list.find(',', close);
    suffix = list.substr(close + 1, after == std::string::npos ? std::string::npos
                                                               : after - close - 1);
  }
  return list.substr(0, open) + list.substr(open + 1, end - open - 1) + suffix;
}

void apply_master_overrides(const EnvMap& env, RankInfo& info) {
  if (const std::string* addr = find(env, "MASTER_ADDR")) info.master_addr = *addr;
  info.master_port = parse_int_or(env, "MASTER_PORT", info.master_port);
}

void validate(const RankInfo& info, const char* rank_var, const char* size_var) {
  if (info.world_size < 1 || info.rank >= info.world_size) {
    C10_THROW_ERROR(ValueError, std::string(rank_var) + "=" + std::to_string(info.rank) +
                                " must be below " + size_var + "=" +
                                std::to_string(info.world_size));
  }
  if (info.local_world_size < 1 || info.local_rank >= info.local_world_size) {
    C10_THROW_ERROR(ValueError, "local rank " + std::to_string(info.local_rank) +
                                " must be below the local world size " +
                                std::to_string(info.local_world_size));
  }
  if (info.master_port < 1 || info.master_port > 65535) {
    C10_THROW_ERROR(ValueError, "MASTER_PORT=" + std::to_string(info.master_port) +
                                " is not a TCP port (1-65535)");
  }
}

// The launcher's store, when `paisoar launch` started this process.
void apply_launcher_store(const EnvMap& env, RankInfo& info) {
  if (!find(env, "PAISOAR_STORE_PORT")) return;
  info.store_port = parse_int(env, "PAISOAR_STORE_PORT");
  if (info.store_port < 1 || info.store_port > 65535) {
    C10_THROW_ERROR(ValueError, "PAISOAR_STORE_PORT=" + std::to_string(info.store_port) +
                                " is not a TCP port (1-65535)");
  }
  const std::string* addr = find(env, "PAISOAR_STORE_ADDR");
  info.store_addr = addr ? *addr : info.master_addr;
  const std::string* token = find(env, "PAISOAR_JOB_TOKEN");
  if (!token) {
    C10_THROW_ERROR(ValueError, 
        "PAISOAR_STORE_PORT is set but PAISOAR_JOB_TOKEN is not: the launcher's rendezvous store "
        "admits only processes with the job's token. Start the program with `paisoar launch`, "
        "or export the job's PAISOAR_JOB_TOKEN");
  }
  info.job_token = *token;
  info.restart_count = find(env, "PAISOAR_RESTART_COUNT")
                           ? parse_int(env, "PAISOAR_RESTART_COUNT")
                           : parse_int_or(env, "TORCHELASTIC_RESTART_COUNT", 0);
}

}  // namespace

RankInfo rank_info_from_env(const EnvMap& env) {
  RankInfo info;
  if (find(env, "RANK") || find(env, "WORLD_SIZE")) {
    info.source = "torchrun";
    info.rank = parse_int(env, "RANK");
    info.world_size = parse_int(env, "WORLD_SIZE");
    info.local_rank = parse_int_or(env, "LOCAL_RANK", info.rank);
    info.local_world_size = parse_int_or(env, "LOCAL_WORLD_SIZE", info.world_size);
    apply_master_overrides(env, info);
    validate(info, "RANK", "WORLD_SIZE");
  } else if (find(env, "SLURM_PROCID")) {
    info.source = "slurm";
    info.rank = parse_int(env, "SLURM_PROCID");
    info.world_size = parse_int(env, "SLURM_NTASKS");
    info.local_rank = parse_int_or(env, "SLURM_LOCALID", 0);
    if (find(env, "SLURM_NTASKS_PER_NODE")) {
      info.local_world_size = parse_int(env, "SLURM_NTASKS_PER_NODE");
    } else if (const std::string* tasks = find(env, "SLURM_TASKS_PER_NODE")) {
      info.local_world_size = std::atoi(tasks->c_str());  // "2(x3)" -> 2
    }
    const std::string* nodes = find(env, "SLURM_JOB_NODELIST");
    if (!nodes) nodes = find(env, "SLURM_NODELIST");
    if (nodes) info.master_addr = first_slurm_host(*nodes);
    if (const std::string* job = find(env, "SLURM_JOB_ID")) {
      // Job ids outgrow int; only the last three digits matter here.
      size_t digits = job->find_first_not_of("0123456789");
      if (digits != std::string::npos || job->empty()) {
        C10_THROW_ERROR(ValueError, "environment variable SLURM_JOB_ID='" + *job +
                                    "' is not a job number");
      }
      info.master_port = 29500 + std::stoi(job->substr(job->size() > 3 ? job->size() - 3 : 0));
    }
    apply_master_overrides(env, info);
    validate(info, "SLURM_PROCID", "SLURM_NTASKS");
  } else if (find(env, "OMPI_COMM_WORLD_RANK")) {
    info.source = "openmpi";
    info.rank = parse_int(env, "OMPI_COMM_WORLD_RANK");
    info.world_size = parse_int(env, "OMPI_COMM_WORLD_SIZE");
    info.local_rank = parse_int_or(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0);
    info.local_world_size = parse_int_or(env, "OMPI_COMM_WORLD_LOCAL_SIZE", 1);
    if (!find(env, "MASTER_ADDR") && info.local_world_size != info.world_size) {
      C10_THROW_ERROR(ValueError, 
          "Open MPI does not say where rank 0 runs: export MASTER_ADDR=<host of rank 0> "
          "(for example `mpirun -x MASTER_ADDR=node01 ...`)");
    }
    apply_master_overrides(env, info);
    validate(info, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
  } else {
    info.source = "default";
    apply_master_overrides(env, info);
  }
  apply_launcher_store(env, info);
  return info;
}

EnvMap process_env() {
  EnvMap env;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string kv(*entry);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

RankInfo rank_info_from_env() { return rank_info_from_env(process_env()); }

CommOptions comm_options_from_env(const EnvMap& env, CommOptions options) {
  if (const std::string* check = find(env, "PAISOAR_CHECK_COLLECTIVES")) {
    if (*check != "0") options.check_collectives = true;
  }
  if (find(env, "PAISOAR_SEGMENT_BYTES")) options.segment_bytes = parse_int(env, "PAISOAR_SEGMENT_BYTES");
  if (const std::string* ifname = find(env, "GLOO_SOCKET_IFNAME")) options.socket_ifname = *ifname;
  if (const std::string* name = find(env, "PAISOAR_COMM_BACKEND")) {
    options.backend = backend_named(*name, "PAISOAR_COMM_BACKEND");
  }
  if (!options.flight_recorder) options.flight_recorder = FlightRecorder::from_env(env);
  return options;
}

}  // namespace paisoar::comm
