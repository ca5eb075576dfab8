// broadcast_plan: the stage count, then per stage (begin, end, memory) and
// time, from the root to every rank.
#include "paisoar/pipeline/plan_broadcast.h"

#include <c10/util/Exception.h>
#include <torch/types.h>

namespace paisoar::pipeline {

PartitionPlan broadcast_plan(const PartitionPlan& plan, comm::Communicator& group, int root) {
  TORCH_CHECK(root >= 0 && root < group.size(), "broadcast_plan: root ", root, " is not a rank of group '",
              group.name(), "'");
  const bool is_root = group.rank() == root;
  torch::Tensor head = torch::tensor({is_root ? static_cast<int64_t>(plan.stages.size()) : 0,
                                      is_root ? plan.memory_limit_bytes : 0});
  group.broadcast(head, root).wait();
  const int64_t stages = head[0].item<int64_t>();
  TORCH_CHECK(stages > 0, "broadcast_plan: rank ", root, "'s plan has no stages");
  torch::Tensor ints = torch::zeros({stages, 3}, torch::kInt64);
  torch::Tensor times = torch::zeros({stages}, torch::kFloat64);
  if (is_root) {
    for (int64_t s = 0; s < stages; ++s) {
      ints[s][0] = plan.stages[s].begin;
      ints[s][1] = plan.stages[s].end;
      ints[s][2] = plan.stages[s].memory_bytes;
      times[s] = plan.stages[s].time_s;
    }
  }
  group.broadcast(ints, root).wait();
  group.broadcast(times, root).wait();
  if (is_root) return plan;
  PartitionPlan out;
  out.memory_limit_bytes = head[1].item<int64_t>();
  const auto* i = ints.data_ptr<int64_t>();
  const auto* t = times.data_ptr<double>();
  for (int64_t s = 0; s < stages; ++s) {
    out.stages.push_back({static_cast<int>(i[3 * s]), static_cast<int>(i[3 * s + 1]), t[s], i[3 * s + 2]});
  }
  return out;
}

}  // namespace paisoar::pipeline
