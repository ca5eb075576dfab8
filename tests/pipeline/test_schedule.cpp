// GPipe and 1F1B op lists: the exact orders for a small case, and for many
// (P, M): every list runs each micro-batch forward then backward once, the
// stages together never deadlock, 1F1B holds at most P-s micro-batches on
// stage s (GPipe M), and with equal op times both have the textbook bubble
// (P-1)/(M+P-1) (tolerance 1e-12, floating sums of small integers).
#include <gtest/gtest.h>

#include "paisoar/pipeline/schedule.h"
#include "paisoar/pipeline/schedule_sim.h"
#include "tests/support/expect_error.h"

using namespace paisoar::pipeline;
using paisoar::testing::expect_error;

namespace {

std::vector<std::vector<PipelineOp>> all_stages(Schedule schedule, int stages, int micro_batches) {
  std::vector<std::vector<PipelineOp>> out;
  for (int s = 0; s < stages; ++s) out.push_back(make_schedule(schedule, stages, s, micro_batches));
  return out;
}

}  // namespace

TEST(PipelineSchedule, GPipeRunsAllForwardsThenAllBackwards) {
  EXPECT_EQ(to_string(make_schedule(Schedule::GPipe, 3, 0, 4)), "F0 F1 F2 F3 B0 B1 B2 B3");
  EXPECT_EQ(to_string(make_schedule(Schedule::GPipe, 3, 2, 4)), "F0 F1 F2 F3 B0 B1 B2 B3");
}

TEST(PipelineSchedule, OneFOneBWarmsUpAlternatesAndCoolsDown) {
  EXPECT_EQ(to_string(make_schedule(Schedule::OneFOneB, 3, 0, 4)), "F0 F1 F2 B0 F3 B1 B2 B3");
  EXPECT_EQ(to_string(make_schedule(Schedule::OneFOneB, 3, 1, 4)), "F0 F1 B0 F2 B1 F3 B2 B3");
  EXPECT_EQ(to_string(make_schedule(Schedule::OneFOneB, 3, 2, 4)), "F0 B0 F1 B1 F2 B2 F3 B3");
  // Fewer micro-batches than the warm-up: all forwards, then all backwards.
  EXPECT_EQ(to_string(make_schedule(Schedule::OneFOneB, 4, 0, 2)), "F0 F1 B0 B1");
}

TEST(PipelineSchedule, EveryListIsCompleteDeadlockFreeAndWithinItsMemoryBound) {
  for (Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB}) {
    for (int stages = 1; stages <= 6; ++stages) {
      for (int m = 1; m <= 12; ++m) {
        SCOPED_TRACE(std::string(to_string(schedule)) + " P=" + std::to_string(stages) +
                     " M=" + std::to_string(m));
        const auto ops = all_stages(schedule, stages, m);
        ScheduleTimeline t = simulate_schedule(ops, m, 1.0, 2.0);  // throws on a bad list
        for (int s = 0; s < stages; ++s) {
          ASSERT_EQ(ops[s].size(), static_cast<size_t>(2 * m));
          const int bound = schedule == Schedule::GPipe ? m : std::min(stages - s, m);
          EXPECT_EQ(t.peak_in_flight[s], bound) << "stage " << s << ": " << to_string(ops[s]);
        }
      }
    }
  }
}

TEST(PipelineSchedule, EqualOpTimesGiveTheTextbookBubble) {
  for (Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB}) {
    for (int stages = 1; stages <= 5; ++stages) {
      for (int m : {1, 2, 4, 8, 16}) {
        // Forward 1, backward 2 on every stage: bubble = (P-1)/(M+P-1).
        ScheduleTimeline t = simulate_schedule(all_stages(schedule, stages, m), m, 1.0, 2.0);
        const double want = static_cast<double>(stages - 1) / (m + stages - 1);
        EXPECT_NEAR(t.bubble_fraction, want, 1e-12)
            << to_string(schedule) << " P=" << stages << " M=" << m;
        EXPECT_DOUBLE_EQ(t.makespan, 3.0 * (m + stages - 1));
      }
    }
  }
}

TEST(PipelineSchedule, SimulationFindsDeadlocksAndBrokenLists) {
  using T = PipelineOp::Type;
  // Stage 1 wants micro-batch 1 first, but stage 0 sends it only after B0,
  // which needs stage 1's B0.
  std::vector<std::vector<PipelineOp>> deadlock{
      {{T::Forward, 0}, {T::Backward, 0}, {T::Forward, 1}, {T::Backward, 1}},
      {{T::Forward, 1}, {T::Forward, 0}, {T::Backward, 0}, {T::Backward, 1}}};
  expect_error([&] { simulate_schedule(deadlock, 2, 1, 1); }, {"deadlocks", "F1 on stage 1"});
  std::vector<std::vector<PipelineOp>> backward_first{{{T::Backward, 0}, {T::Forward, 0}}};
  expect_error([&] { simulate_schedule(backward_first, 1, 1, 1); }, {"B0 on stage 0", "before"});
  std::vector<std::vector<PipelineOp>> missing{{{T::Forward, 0}, {T::Forward, 1}, {T::Backward, 1}}};
  expect_error([&] { simulate_schedule(missing, 2, 1, 1); }, {"never runs the backward of micro-batch 0"});
}

TEST(PipelineSchedule, ParsesNamesAndRejectsBadArguments) {
  EXPECT_EQ(parse_schedule("GPipe"), Schedule::GPipe);
  EXPECT_EQ(parse_schedule("1f1b"), Schedule::OneFOneB);
  EXPECT_THROW(parse_schedule("interleaved"), c10::ValueError);
  expect_error([] { make_schedule(Schedule::GPipe, 2, 2, 4); }, {"stage 2"});
  expect_error([] { make_schedule(Schedule::GPipe, 2, 0, 0); }, {"micro_batches"});
}
