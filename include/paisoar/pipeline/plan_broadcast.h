// broadcast_plan: one partition plan for every rank. Profiled layer times
// differ from rank to rank, so plans computed on each rank may differ; the
// Pipeline refuses ranks whose stages do not line up. Compute the plan on one
// rank (or on all) and broadcast it.
#pragma once

#include "paisoar/comm/communicator.h"
#include "paisoar/pipeline/partition.h"

namespace paisoar::pipeline {

// Collective over `group`: returns `root`'s plan on every rank (stage bounds,
// times, memory and limit; layer names only on `root`, whose plan is returned
// as is). `plan` is read only on `root`.
PartitionPlan broadcast_plan(const PartitionPlan& plan, comm::Communicator& group, int root = 0);

}  // namespace paisoar::pipeline
