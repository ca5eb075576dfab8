// The partitioner against a brute force over every split, on random layer
// costs (many seeds, with and without a memory limit, integer times so the
// optimum is exact, and real times within 1e-9 relative); the printed plan;
// and its errors: more stages than layers, a limit no split meets (naming the
// smallest that does), negative costs.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "paisoar/pipeline/partition.h"
#include "tests/support/expect_error.h"

using namespace paisoar::pipeline;
using paisoar::testing::expect_error;

namespace {

struct Best {
  double time = std::numeric_limits<double>::infinity();  // infinity: no split fits
  int64_t min_memory = std::numeric_limits<int64_t>::max();
};

// Every way to put stages-1 cuts between the layers.
void brute_force(const std::vector<LayerCost>& costs, int stages, int64_t limit, std::vector<int>& bounds,
                 Best& best) {
  const int layers = static_cast<int>(costs.size());
  if (static_cast<int>(bounds.size()) == stages) {
    bounds.push_back(layers);
    double slowest = 0;
    int64_t largest = 0;
    for (size_t s = 0; s + 1 < bounds.size(); ++s) {
      double t = 0;
      int64_t m = 0;
      for (int i = bounds[s]; i < bounds[s + 1]; ++i) t += costs[i].time_s, m += costs[i].memory_bytes;
      slowest = std::max(slowest, t);
      largest = std::max(largest, m);
    }
    best.min_memory = std::min(best.min_memory, largest);
    if (limit <= 0 || largest <= limit) best.time = std::min(best.time, slowest);
    bounds.pop_back();
    return;
  }
  const int remaining = stages - static_cast<int>(bounds.size());
  for (int next = bounds.back() + 1; next <= layers - remaining; ++next) {
    bounds.push_back(next);
    brute_force(costs, stages, limit, bounds, best);
    bounds.pop_back();
  }
}

Best brute_force(const std::vector<LayerCost>& costs, int stages, int64_t limit) {
  std::vector<int> bounds{0};
  Best best;
  brute_force(costs, stages, limit, bounds, best);
  return best;
}

void expect_valid(const PartitionPlan& plan, const std::vector<LayerCost>& costs, int stages, int64_t limit) {
  ASSERT_EQ(plan.stages.size(), static_cast<size_t>(stages));
  EXPECT_EQ(plan.stages.front().begin, 0);
  EXPECT_EQ(plan.stages.back().end, static_cast<int>(costs.size()));
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    EXPECT_LT(plan.stages[s].begin, plan.stages[s].end);
    if (s > 0) {
      EXPECT_EQ(plan.stages[s].begin, plan.stages[s - 1].end);
    }
    if (limit > 0) {
      EXPECT_LE(plan.stages[s].memory_bytes, limit);
    }
  }
}

std::vector<LayerCost> random_costs(std::mt19937& rng, int layers, bool integer_times) {
  std::uniform_int_distribution<int> itime(0, 20), mem(1, 100);
  std::uniform_real_distribution<double> rtime(0.0, 5.0);
  std::vector<LayerCost> costs(layers);
  for (auto& c : costs) {
    c.time_s = integer_times ? itime(rng) : rtime(rng);
    c.memory_bytes = mem(rng);
  }
  return costs;
}

}  // namespace

TEST(PipelinePartition, MatchesBruteForceOnRandomCosts) {
  int feasible = 0, infeasible = 0;
  for (int seed = 0; seed < 400; ++seed) {
    std::mt19937 rng(seed);
    const int layers = std::uniform_int_distribution<int>(1, 9)(rng);
    const int stages = std::uniform_int_distribution<int>(1, layers)(rng);
    const bool integer_times = seed % 4 != 3;
    const auto costs = random_costs(rng, layers, integer_times);
    // No limit on a third of the seeds, a random one (often too small) on the rest.
    const int64_t limit = seed % 3 == 0 ? 0 : std::uniform_int_distribution<int64_t>(50, 400)(rng);
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + std::to_string(layers) + " layers, " +
                 std::to_string(stages) + " stages, limit " + std::to_string(limit));
    const Best want = brute_force(costs, stages, limit);
    EXPECT_EQ(min_memory_limit(costs, stages), want.min_memory);
    if (want.time == std::numeric_limits<double>::infinity()) {
      ++infeasible;
      expect_error([&] { partition_layers(costs, stages, limit); },
                   {"smallest limit that works", ("(" + std::to_string(want.min_memory) + " bytes)").c_str()});
      continue;
    }
    ++feasible;
    const PartitionPlan plan = partition_layers(costs, stages, limit);
    expect_valid(plan, costs, stages, limit);
    if (integer_times) {
      EXPECT_EQ(plan.max_time_s(), want.time);
    } else {
      EXPECT_NEAR(plan.max_time_s(), want.time, 1e-9 * want.time);
    }
  }
  // The seeds exercise both outcomes.
  EXPECT_GT(feasible, 100);
  EXPECT_GT(infeasible, 20);
}

TEST(PipelinePartition, BeatsTheEvenSplitOnAnUnbalancedModel) {
  // One heavy layer late in the model: equal layer counts put it with others.
  std::vector<LayerCost> costs(8, LayerCost{"", 1.0, 10});
  costs[6].time_s = 6.0;
  const PartitionPlan even = even_partition(costs, 4);
  const PartitionPlan best = partition_layers(costs, 4);
  EXPECT_EQ(even.max_time_s(), 7.0);  // layers 6-7
  EXPECT_EQ(best.max_time_s(), 6.0);  // layer 6 alone
  EXPECT_EQ(best.stages[best.slowest_stage()].begin, 6);
  EXPECT_EQ(best.stages[best.slowest_stage()].end, 7);
}

TEST(PipelinePartition, PrintsEveryStageWithItsLayersTimeAndMemory) {
  std::vector<LayerCost> costs{{"0:Linear", 0.002, 2048}, {"1:ReLU", 0.0005, 1024}, {"2:Linear", 0.003, 3 << 20}};
  const PartitionPlan plan = partition_layers(costs, 2, 8 << 20);
  const std::string text = plan.to_string();
  EXPECT_NE(text.find("3 layers in 2 stages"), std::string::npos) << text;
  EXPECT_NE(text.find("memory limit 8.00 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("stage 0: layers 0-1  time 2.50 ms  memory 3.00 KiB  [0:Linear, 1:ReLU]"),
            std::string::npos) << text;
  EXPECT_NE(text.find("stage 1: layers 2-2  time 3.00 ms  memory 3.00 MiB  <- slowest  [2:Linear]"),
            std::string::npos) << text;
}

TEST(PipelinePartition, MoreStagesThanLayersIsAClearError) {
  std::vector<LayerCost> costs(3, LayerCost{"", 1.0, 1});
  expect_error([&] { partition_layers(costs, 4); },
               {"cannot split 3 layers into 4 pipeline stages", "use at most 3 stages"});
  expect_error([&] { partition_layers({}, 1); }, {"no layers"});
  expect_error([&] { partition_layers(costs, 0); }, {"at least one stage"});
}

TEST(PipelinePartition, InfeasibleMemoryLimitNamesTheSmallestThatWorks) {
  // Layers of 4, 1, 3, 2 MiB in 2 stages: the splits need 6, 5 or 8 MiB; {4,1} {3,2} is the least.
  std::vector<LayerCost> costs{{"", 1, 4 << 20}, {"", 1, 1 << 20}, {"", 1, 3 << 20}, {"", 1, 2 << 20}};
  EXPECT_EQ(min_memory_limit(costs, 2), 5 << 20);
  expect_error([&] { partition_layers(costs, 2, 4 << 20); },
               {"no split of 4 layers into 2 stages", "memory limit of 4.00 MiB",
                "smallest limit that works is 5.00 MiB"});
  const PartitionPlan plan = partition_layers(costs, 2, 5 << 20);
  EXPECT_EQ(plan.stages[0].end, 2);
}

TEST(PipelinePartition, RejectsNegativeOrNonFiniteCosts) {
  expect_error([] { partition_layers({{"a", 1, 1}, {"b", -1, 1}}, 2); }, {"layer 1 (b)", "not negative"});
  expect_error([] { partition_layers({{"a", std::nan(""), 1}}, 1); }, {"layer 0 (a)", "finite"});
  expect_error([] { partition_layers({{"a", 1, -5}}, 1); }, {"layer 0 (a)", "memory -5"});
}
