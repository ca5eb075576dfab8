// The exact partitioner: a dynamic programme over (stages used, layers covered)
// minimising the slowest stage under a per-stage memory limit, and the
// min-max-memory programme that names the smallest limit when none fits.
#include "paisoar/pipeline/partition.h"

#include <c10/util/Exception.h>

#include <cmath>
#include <limits>

#include "src/pipeline/format_units.h"

namespace paisoar::pipeline {
namespace {

void check_costs(const std::vector<LayerCost>& costs, int stages) {
  const int layers = static_cast<int>(costs.size());
  TORCH_CHECK(stages >= 1, "a pipeline needs at least one stage, got ", stages);
  TORCH_CHECK(layers >= 1, "cannot partition a model with no layers");
  TORCH_CHECK(stages <= layers, "cannot split ", layers, " layers into ", stages,
              " pipeline stages: every stage needs at least one layer; use at most ", layers,
              " stages (or a model with more, finer layers)");
  for (int i = 0; i < layers; ++i) {
    TORCH_CHECK(std::isfinite(costs[i].time_s) && costs[i].time_s >= 0, "layer ", i, " (",
                costs[i].name, ") has time ", costs[i].time_s,
                "; layer costs must be finite and not negative");
    TORCH_CHECK(costs[i].memory_bytes >= 0, "layer ", i, " (", costs[i].name, ") has memory ",
                costs[i].memory_bytes, " bytes; layer costs must not be negative");
  }
}

}  // namespace

PartitionPlan plan_from_bounds(const std::vector<LayerCost>& costs, const std::vector<int>& bounds) {
  TORCH_CHECK(bounds.size() >= 2 && bounds.front() == 0 &&
                  bounds.back() == static_cast<int>(costs.size()),
              "stage bounds must start at 0 and end at the number of layers (", costs.size(), ")");
  PartitionPlan plan;
  for (const auto& c : costs) plan.layer_names.push_back(c.name);
  for (size_t s = 0; s + 1 < bounds.size(); ++s) {
    TORCH_CHECK(bounds[s] < bounds[s + 1], "stage ", s, " would be empty (bounds ", bounds[s],
                " and ", bounds[s + 1], ")");
    StagePlan stage{bounds[s], bounds[s + 1], 0, 0};
    for (int i = stage.begin; i < stage.end; ++i) {
      stage.time_s += costs[i].time_s;
      stage.memory_bytes += costs[i].memory_bytes;
    }
    plan.stages.push_back(stage);
  }
  return plan;
}

int64_t min_memory_limit(const std::vector<LayerCost>& costs, int stages) {
  check_costs(costs, stages);
  const int layers = static_cast<int>(costs.size());
  constexpr int64_t kInf = std::numeric_limits<int64_t>::max();
  // best[p][j]: the smallest largest-stage memory of layers [0, j) in p stages.
  std::vector<std::vector<int64_t>> best(stages + 1, std::vector<int64_t>(layers + 1, kInf));
  best[0][0] = 0;
  for (int p = 1; p <= stages; ++p) {
    for (int j = p; j <= layers; ++j) {
      int64_t mem = 0;
      for (int i = j - 1; i >= p - 1; --i) {
        mem += costs[i].memory_bytes;
        if (best[p - 1][i] == kInf) continue;
        best[p][j] = std::min(best[p][j], std::max(best[p - 1][i], mem));
      }
    }
  }
  return best[stages][layers];
}

PartitionPlan partition_layers(const std::vector<LayerCost>& costs, int stages,
                               int64_t memory_limit_bytes) {
  check_costs(costs, stages);
  const int layers = static_cast<int>(costs.size());
  const bool limited = memory_limit_bytes > 0;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // best[p][j]: the smallest slowest-stage time of layers [0, j) in p stages
  // that all fit the limit; cut[p][j]: where the last of those stages starts.
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(layers + 1, kInf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(layers + 1, -1));
  best[0][0] = 0;
  for (int p = 1; p <= stages; ++p) {
    for (int j = p; j <= layers - (stages - p); ++j) {
      double time = 0;
      int64_t mem = 0;
      for (int i = j - 1; i >= p - 1; --i) {  // last stage = layers [i, j)
        time += costs[i].time_s;
        mem += costs[i].memory_bytes;
        if (limited && mem > memory_limit_bytes) break;  // costs are >= 0: only grows
        if (best[p - 1][i] == kInf) continue;
        const double slowest = std::max(best[p - 1][i], time);
        if (slowest < best[p][j]) {
          best[p][j] = slowest;
          cut[p][j] = i;
        }
      }
    }
  }
  if (best[stages][layers] == kInf) {
    const int64_t smallest = min_memory_limit(costs, stages);
    TORCH_CHECK(false, "no split of ", layers, " layers into ", stages,
                " stages keeps every stage within the memory limit of ",
                detail::format_bytes(memory_limit_bytes), " (", memory_limit_bytes,
                " bytes); the smallest limit that works is ", detail::format_bytes(smallest), " (",
                smallest, " bytes): raise the limit, use more stages, or shrink the largest layers");
  }
  std::vector<int> bounds(stages + 1, 0);
  bounds[stages] = layers;
  for (int p = stages, j = layers; p > 0; --p) {
    j = cut[p][j];
    bounds[p - 1] = j;
  }
  PartitionPlan plan = plan_from_bounds(costs, bounds);
  plan.memory_limit_bytes = limited ? memory_limit_bytes : 0;
  return plan;
}

PartitionPlan even_partition(const std::vector<LayerCost>& costs, int stages) {
  check_costs(costs, stages);
  const int layers = static_cast<int>(costs.size());
  std::vector<int> bounds{0};
  for (int s = 0; s < stages; ++s) bounds.push_back(bounds.back() + layers / stages + (s < layers % stages));
  return plan_from_bounds(costs, bounds);
}

}  // namespace paisoar::pipeline
