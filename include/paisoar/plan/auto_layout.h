// `parallel: auto` inside a run: rank 0 plans for the world (plan_layouts),
// prints the ranked table, appends it to <run_dir>/metrics.jsonl as a "plan"
// record, and hands its choice to every rank through the job's store; every
// rank trains the config that choice gives. The choice is made once per job:
// a restarted job trains the layout its first attempt chose (its checkpoint
// is of that layout).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "paisoar/comm/communicator.h"
#include "paisoar/train/train_config.h"

namespace paisoar::plan {

// `config` with the planned layout applied (parallel.auto off); `config`
// itself when parallel.auto is off. Throws train::ConfigError on every rank
// when no layout is feasible (rank 0's words).
// `cache_path`: the planner's measurements kept between runs ("": none);
// `node_cpus`: the CPUs this node's ranks share, where rank 0 measures
// (PlanOptions::node_cpus).
train::TrainConfig choose_layout(const train::TrainConfig& config, comm::Communicator& world, int ranks_per_node,
                                 const std::string& cache_path, const std::vector<int>& node_cpus,
                                 std::ostream& log);

}  // namespace paisoar::plan
