// gather_step_times with 3 ranks as threads over a HashStore: every rank gets
// every rank's mean step time, and the advisor names the slow one.
#include <gtest/gtest.h>

#include <mutex>

#include "paisoar/profiler/advisor.h"
#include "paisoar/profiler/rank_step_times.h"
#include "tests/support/thread_ranks.h"

using namespace paisoar;

namespace {

TEST(RankStepTimes, EveryRankGetsAllAndTheAdvisorFindsTheStraggler) {
  const std::vector<double> mine = {0.100, 0.250, 0.105};  // rank 1 is slow
  std::mutex mutex;
  std::vector<std::vector<double>> seen(3);
  paisoar::testing::run_ranks(3, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto all = profiler::gather_step_times(*comm, mine[static_cast<size_t>(rank)]);
    std::lock_guard<std::mutex> lock(mutex);
    seen[static_cast<size_t>(rank)] = std::move(all);
  });
  for (const auto& all : seen) EXPECT_EQ(all, mine);  // fp64 all the way: exact

  profiler::RunMeasurements run;
  run.per_rank_step_s = seen[0];
  const auto advice = profiler::advise(run);
  ASSERT_EQ(advice.size(), 1u);
  EXPECT_EQ(advice[0].verdict, profiler::kStraggler);
  EXPECT_NE(advice[0].evidence.find("rank 1"), std::string::npos) << advice[0].evidence;
}

}  // namespace
