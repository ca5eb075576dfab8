// The measurements the planner's cost model is fed with (step_model.h's
// CostInputs), made in this process on this machine, or taken from the cost
// cache when it holds them under the same key.
#pragma once

#include <string>
#include <vector>

#include "paisoar/comm/types.h"
#include "paisoar/plan/layout_choice.h"
#include "paisoar/plan/step_model.h"
#include "paisoar/train/train_config.h"
#include "src/plan/cost_cache.h"

namespace paisoar::plan {

// Where the ranks will run, as the launcher would start them.
struct PlanMachine {
  int cores = 1;     // this process's usable cores (one node's)
  int per_node = 1;  // ranks per node
  int threads = 1;   // intra-op threads per rank: cores / per_node, as `paisoar launch` sets OMP_NUM_THREADS
  c10::Device device = c10::Device(c10::DeviceType::CPU);
  comm::Backend backend = comm::Backend::Shm;  // what carries the collectives
  std::string precision;                       // amp.dtype resolved for the device (filled by measure_costs)
};

// Everything predict_step needs for `layouts` of `config`'s reference model:
// the layers at every micro-batch size they use (times under the node's
// load, bytes alone), the startup profile's peak, the tensor-parallel
// splits, the optimizer's speed, the collectives of every group size, the
// model's bytes. New measurements are added to `cache` (saved by the caller).
CostInputs measure_costs(const train::TrainConfig& config, const std::vector<LayoutChoice>& layouts,
                         PlanMachine& machine, CostCache& cache);

}  // namespace paisoar::plan
