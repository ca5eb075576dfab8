// The shared-memory waits: how ShmWaitPolicy's budgets follow the waits it
// is told of (shm_wait_policy.h), and when a segment's ranks count as more
// than their CPUs: from every rank's affinity mask together, so ranks bound
// to a core each (paisoar launch, mpirun --bind-to core) spin, and ranks
// sharing fewer CPUs than they are yield.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "paisoar/comm/store.h"
#include "src/comm/shm_segment.h"
#include "src/comm/shm_wait_policy.h"
#include "src/util/cpu_count.h"
#include "src/util/thread_affinity.h"

namespace paisoar::comm::detail {
namespace {

using std::chrono::microseconds;
using Ended = ShmWaitPolicy::Ended;

TEST(ShmWaitPolicy, StartsAtTheOldTimers) {
  const ShmWaitPolicy p;
  EXPECT_EQ(p.spin(false), microseconds(20));
  EXPECT_EQ(p.yield(false), microseconds(200));
  EXPECT_EQ(p.spin(true), microseconds(0));
  EXPECT_EQ(p.yield(true), microseconds(1000));
}

TEST(ShmWaitPolicy, ShortWaitsShrinkTheSpinTowardTwiceTheirLength) {
  ShmWaitPolicy p;
  for (int i = 0; i < 200; ++i) p.record(microseconds(3), Ended::kSpinning, false);
  EXPECT_GE(p.spin(false), microseconds(6));
  EXPECT_LE(p.spin(false), microseconds(7));
  // Never below the floor.
  for (int i = 0; i < 200; ++i) p.record(microseconds(0), Ended::kSpinning, false);
  EXPECT_EQ(p.spin(false), ShmWaitPolicy::kMinSpin);
}

TEST(ShmWaitPolicy, AWaitEndingWhileYieldingStretchesTheSpinToCoverIt) {
  ShmWaitPolicy p;
  p.record(microseconds(30), Ended::kYielding, false);
  EXPECT_EQ(p.spin(false), microseconds(60));
  p.record(microseconds(400), Ended::kYielding, false);
  EXPECT_EQ(p.spin(false), ShmWaitPolicy::kMaxSpin);
  EXPECT_GE(p.yield(false), microseconds(200));
}

TEST(ShmWaitPolicy, ASleepJustPastTheBudgetStretchesTheYield) {
  ShmWaitPolicy p;
  p.record(microseconds(600), Ended::kAsleep, false);
  EXPECT_EQ(p.yield(false), microseconds(900));
  p.record(microseconds(1900), Ended::kAsleep, false);
  EXPECT_EQ(p.yield(false), ShmWaitPolicy::kMaxYield);
}

TEST(ShmWaitPolicy, LongWaitsShrinkBothBudgetsToTheirFloors) {
  ShmWaitPolicy p;
  for (int i = 0; i < 50; ++i) p.record(std::chrono::milliseconds(20), Ended::kAsleep, false);
  EXPECT_EQ(p.spin(false), ShmWaitPolicy::kMinSpin);
  EXPECT_EQ(p.yield(false), ShmWaitPolicy::kMinYield);
  // and a peer that is close again brings the spin back at once
  p.record(microseconds(10), Ended::kYielding, false);
  EXPECT_EQ(p.spin(false), microseconds(20));
}

TEST(ShmWaitPolicy, OversubscribedItNeverSpinsAndLearnsOnlyTheYield) {
  ShmWaitPolicy p;
  for (int i = 0; i < 200; ++i) p.record(microseconds(40), Ended::kYielding, true);
  EXPECT_EQ(p.spin(true), microseconds(0));
  EXPECT_GE(p.yield(true), microseconds(80));
  EXPECT_LE(p.yield(true), microseconds(90));
  EXPECT_EQ(p.spin(false), microseconds(20)) << "the other mode's budgets are untouched";
}

TEST(ShmWaitPolicy, EachThreadLearnsItsOwn) {
  ShmWaitPolicy::of_this_thread().record(std::chrono::milliseconds(50), Ended::kAsleep, false);
  ShmWaitPolicy::Duration other{};
  std::thread([&] { other = ShmWaitPolicy::of_this_thread().spin(false); }).join();
  EXPECT_EQ(other, microseconds(20));
}

// Whether a 2-rank segment made by two threads, each on `cpus_of[rank]`,
// counts its ranks as more than their CPUs.
bool oversubscribed_with(const std::vector<std::vector<int>>& cpus_of) {
  const Store store = Store::hash();
  bool result[2] = {false, false};
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      const util::ScopedThreadAffinity on(cpus_of[r]);
      ShmSegment segment(store, r, 2, std::chrono::seconds(30));
      result[r] = segment.oversubscribed();
    });
  }
  for (auto& t : ranks) t.join();
  EXPECT_EQ(result[0], result[1]) << "every rank comes to the same answer";
  return result[0];
}

TEST(ShmSegmentCpus, RanksBoundToACoreEachAreNotOversubscribed) {
  ASSERT_GE(util::usable_cpus(), 2) << "this test needs a machine with at least 2 CPUs";
  EXPECT_FALSE(oversubscribed_with({{0}, {1}}));
  EXPECT_TRUE(oversubscribed_with({{0}, {0}}));
  EXPECT_FALSE(oversubscribed_with({{}, {}})) << "unbound on 2 CPUs or more";
}

}  // namespace
}  // namespace paisoar::comm::detail
