// The automatic pipeline split: L layers into P contiguous stages, minimising
// the slowest stage's time with every stage under a memory limit, by an exact
// dynamic programme over the per-layer costs (layer_cost.h).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "paisoar/pipeline/layer_cost.h"

namespace paisoar::pipeline {

struct StagePlan {
  int begin = 0;  // first layer
  int end = 0;    // one past the last layer
  double time_s = 0;
  int64_t memory_bytes = 0;
  int layers() const { return end - begin; }
};

struct PartitionPlan {
  std::vector<StagePlan> stages;
  std::vector<std::string> layer_names;  // from the costs, for printing
  int64_t memory_limit_bytes = 0;        // 0: none
  double max_time_s() const;
  int slowest_stage() const;
  // A table: each stage's layers, time and memory, the slowest stage marked.
  std::string to_string() const;
};
std::ostream& operator<<(std::ostream& out, const PartitionPlan& plan);

// The split of `costs` into `stages` contiguous, non-empty stages with the
// smallest slowest-stage time such that every stage's memory (the sum of its
// layers') is at most `memory_limit_bytes` (0: no limit). Exact: O(P L^2).
// Throws c10::Error when stages > layers, when a cost is negative or not
// finite, and when no split meets the limit (naming the smallest limit that does).
PartitionPlan partition_layers(const std::vector<LayerCost>& costs, int stages,
                               int64_t memory_limit_bytes = 0);

// The smallest per-stage memory limit any split of `costs` into `stages` meets.
int64_t min_memory_limit(const std::vector<LayerCost>& costs, int stages);

// The naive split for comparison: layer counts as equal as possible (the first
// L % P stages get one more), costs summed as partition_layers does.
PartitionPlan even_partition(const std::vector<LayerCost>& costs, int stages);

// The plan with stages [bounds[s], bounds[s+1]) and their summed costs;
// bounds = {0, ..., L}. Throws c10::Error on bounds that are not increasing.
PartitionPlan plan_from_bounds(const std::vector<LayerCost>& costs, const std::vector<int>& bounds);

}  // namespace paisoar::pipeline
