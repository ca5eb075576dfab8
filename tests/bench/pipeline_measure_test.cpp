// The bubble that `paisoar bench pipeline` reports (bench/pipeline_measure.h):
// stats shaped like a simulated timeline of either schedule with equal op
// times give exactly (P-1)/(M+P-1), so a measured gap is the executor's, not
// the bench's arithmetic.
#include <gtest/gtest.h>

#include "bench/pipeline_measure.h"
#include "paisoar/pipeline/schedule_sim.h"

namespace paisoar::bench {
namespace {

namespace pp = pipeline;

TEST(PipelineMeasure, SimulatedScheduleGivesTheFormula) {
  for (pp::Schedule schedule : {pp::Schedule::GPipe, pp::Schedule::OneFOneB}) {
    for (int p = 2; p <= 4; ++p) {
      for (int m : {1, 2, 4, 8, 16}) {
        std::vector<std::vector<pp::PipelineOp>> lists;
        for (int s = 0; s < p; ++s) lists.push_back(pp::make_schedule(schedule, p, s, m));
        const pp::ScheduleTimeline t = pp::simulate_schedule(lists, m, 1.0, 2.0);
        std::vector<pp::PipelineStepStats> stats(p);
        for (int s = 0; s < p; ++s) {
          stats[s].step_s = t.makespan;
          stats[s].compute_s = t.busy[s];
        }
        EXPECT_NEAR(measured_bubble(stats), bubble_formula(p, m), 1e-9)
            << pp::to_string(schedule) << " P=" << p << " M=" << m;
      }
    }
  }
}

TEST(PipelineMeasure, BubbleUsesTheSlowestStagesStep) {
  std::vector<pp::PipelineStepStats> stats(2);
  stats[0].step_s = 1.0;
  stats[0].compute_s = 0.5;
  stats[1].step_s = 2.0;  // stage 0 finished early: it idled too, until the step's end
  stats[1].compute_s = 2.0;
  EXPECT_NEAR(measured_bubble(stats), 1 - 2.5 / 4.0, 1e-12);
}

TEST(PipelineMeasure, RelativeGap) {
  EXPECT_NEAR(relative_gap(0.11, 0.10), 0.10, 1e-12);
  EXPECT_NEAR(relative_gap(0.09, 0.10), 0.10, 1e-12);
  EXPECT_EQ(relative_gap(0, 0), 0.0);
  EXPECT_EQ(bubble_formula(2, 8), 1.0 / 9);
}

}  // namespace
}  // namespace paisoar::bench
