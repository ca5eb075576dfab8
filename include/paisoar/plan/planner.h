// The planner (`paisoar plan`, `parallel: auto`, paisoar.plan): every layout
// a config can take on N ranks, each with its predicted step time (compute,
// exposed communication, bubble, optimizer) and peak memory per rank from
// the cost model (step_model.h) fed with measurements made in this process
// on this machine (cached, cost_cache), ranked fastest first; the layouts
// dropped, each with why.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "paisoar/comm/env.h"
#include "paisoar/plan/layout_choice.h"
#include "paisoar/plan/step_model.h"
#include "paisoar/train/train_config.h"

namespace paisoar::plan {

struct PlanOptions {
  int nproc = 2;               // ranks in all
  int nodes = 1;               // hosts they are spread over (ranks per node = nproc / nodes)
  double memory_budget_mib = 0;  // per rank; 0: memory.budget_mb, else none
  // The measurements kept between plans ("": none); the apps pass
  // default_cache_path(the process environment).
  std::string cache_path;
  // The CPUs one node's ranks share, where the measurements run (a rank
  // bound to its own cores widens its planning thread to them); empty: the
  // calling thread's own mask. The apps pass node_cpus_from_env(...).
  std::vector<int> node_cpus;
};

struct RankedPlan {
  LayoutChoice layout;
  StepPrediction predicted;
};

struct Planning {
  std::vector<RankedPlan> feasible;  // fastest first
  std::vector<DroppedLayout> dropped;
  std::string machine;               // "2 cores, 1 thread per rank, shared memory between ranks"
  double budget_mib = 0;             // 0: none
};

// Throws train::ConfigError when no layout is feasible: the budget fits
// none ("no layout fits 200 MiB per rank; the smallest, ..., needs 260 MiB"),
// or the model or batch takes none on this many ranks (the first reason).
// Measurement warnings (a cost cache ignored) go to `log`.
Planning plan_layouts(const train::TrainConfig& config, const PlanOptions& options, std::ostream& log);

// PAISOAR_PLAN_CACHE, else $XDG_CACHE_HOME/paisoar/plan_costs.json, else
// $HOME/.cache/paisoar/plan_costs.json, from `env` (comm::process_env() at
// the edge); "" when none is set.
std::string default_cache_path(const comm::EnvMap& env);

// The cost cache a `--cache` flag (or paisoar.plan's cache=) names: its
// path; "" (not given): default_cache_path(env); "-": none ("").
std::string cache_path_from_flag(const std::string& flag, const comm::EnvMap& env);

// PAISOAR_NODE_CPUS ("0-7", set by `paisoar launch`) from `env` as CPU ids;
// empty when it is not set or not a CPU list.
std::vector<int> node_cpus_from_env(const comm::EnvMap& env);

// The ranked table as `paisoar plan` prints it, and the dropped layouts.
std::string format_planning(const Planning& planning);
// The feasible plans as a JSON list, best first: overrides, nproc,
// predicted_step_ms (and its parts), predicted_peak_mib, layout.
std::string planning_json(const Planning& planning, int nproc);

}  // namespace paisoar::plan
