// Runs a pipeline's per-stage op lists on paper: checks that every op's inputs
// come before it (no deadlock, each micro-batch forward then backward once per
// stage) and gives the timeline for given forward/backward times, hence the
// bubble a schedule has before any rank runs it.
#pragma once

#include <vector>

#include "paisoar/pipeline/schedule.h"

namespace paisoar::pipeline {

struct ScheduleTimeline {
  double makespan = 0;             // time until the last op of any stage ends
  std::vector<double> busy;        // per stage: time spent running ops
  std::vector<int> peak_in_flight; // per stage: see peak_in_flight()
  // 1 - sum(busy) / (stages * makespan): the share of stage-time spent waiting.
  double bubble_fraction = 0;
};

// stage_ops[s] is stage s's op list (as make_schedule gives it). Dependencies:
// F(s, m) needs F(s-1, m); B(s, m) needs F(s, m) and B(s+1, m). An op starts
// when its stage finished the previous op and its inputs are done; sends never
// block (as in the executor, which waits for sends at the end of the step).
// Throws c10::Error naming the stuck ops when the lists deadlock, and naming the
// op when a list runs a micro-batch twice, misses one, or runs B before F.
ScheduleTimeline simulate_schedule(const std::vector<std::vector<PipelineOp>>& stage_ops,
                                   int micro_batches, double forward_time, double backward_time);
// The same with each stage's own forward and backward time per micro-batch
// (one entry per stage), as the planner predicts them for a partition.
ScheduleTimeline simulate_schedule(const std::vector<std::vector<PipelineOp>>& stage_ops, int micro_batches,
                                   const std::vector<double>& forward_times,
                                   const std::vector<double>& backward_times);

}  // namespace paisoar::pipeline
