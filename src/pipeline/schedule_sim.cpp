// The paper run of per-stage op lists: dependency order, deadlock detection
// and the timeline (hence bubble) for fixed forward and backward times.
#include "paisoar/pipeline/schedule_sim.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <string>

namespace paisoar::pipeline {
namespace {

std::string op_name(int stage, const PipelineOp& op) {
  return std::string(op.type == PipelineOp::Type::Forward ? "F" : "B") +
         std::to_string(op.micro_batch) + " on stage " + std::to_string(stage);
}

// Each stage runs each micro-batch's forward once and its backward once, after the forward.
void check_lists(const std::vector<std::vector<PipelineOp>>& stage_ops, int micro_batches) {
  for (size_t s = 0; s < stage_ops.size(); ++s) {
    std::vector<int> forwards(micro_batches, 0), backwards(micro_batches, 0);
    for (const auto& op : stage_ops[s]) {
      TORCH_CHECK(op.micro_batch >= 0 && op.micro_batch < micro_batches, "op ",
                  op_name(static_cast<int>(s), op), " names a micro-batch outside [0, ",
                  micro_batches, ")");
      if (op.type == PipelineOp::Type::Forward) {
        TORCH_CHECK(++forwards[op.micro_batch] == 1, "op ", op_name(static_cast<int>(s), op),
                    " runs twice");
      } else {
        TORCH_CHECK(forwards[op.micro_batch] == 1, "op ", op_name(static_cast<int>(s), op),
                    " runs before that micro-batch's forward");
        TORCH_CHECK(++backwards[op.micro_batch] == 1, "op ", op_name(static_cast<int>(s), op),
                    " runs twice");
      }
    }
    for (int m = 0; m < micro_batches; ++m) {
      TORCH_CHECK(backwards[m] == 1, "stage ", s, " never runs the backward of micro-batch ", m);
    }
  }
}

}  // namespace

ScheduleTimeline simulate_schedule(const std::vector<std::vector<PipelineOp>>& stage_ops,
                                   int micro_batches, double forward_time, double backward_time) {
  return simulate_schedule(stage_ops, micro_batches, std::vector<double>(stage_ops.size(), forward_time),
                           std::vector<double>(stage_ops.size(), backward_time));
}

ScheduleTimeline simulate_schedule(const std::vector<std::vector<PipelineOp>>& stage_ops, int micro_batches,
                                   const std::vector<double>& forward_times,
                                   const std::vector<double>& backward_times) {
  const int stages = static_cast<int>(stage_ops.size());
  TORCH_CHECK(stages > 0, "simulate_schedule needs at least one stage");
  TORCH_CHECK(forward_times.size() == stage_ops.size() && backward_times.size() == stage_ops.size(),
              "simulate_schedule: one forward and one backward time per stage");
  check_lists(stage_ops, micro_batches);
  constexpr double kNotDone = -1;
  // done_f[s][m] / done_b[s][m]: when that op ended, kNotDone before.
  std::vector<std::vector<double>> done_f(stages, std::vector<double>(micro_batches, kNotDone));
  auto done_b = done_f;
  std::vector<size_t> next(stages, 0);
  std::vector<double> free_at(stages, 0);
  ScheduleTimeline out;
  out.busy.assign(stages, 0);
  size_t remaining = 0;
  for (const auto& ops : stage_ops) remaining += ops.size();
  while (remaining > 0) {
    bool progressed = false;
    for (int s = 0; s < stages; ++s) {
      while (next[s] < stage_ops[s].size()) {
        const PipelineOp& op = stage_ops[s][next[s]];
        const int m = op.micro_batch;
        double ready = free_at[s];
        if (op.type == PipelineOp::Type::Forward) {
          if (s > 0 && done_f[s - 1][m] == kNotDone) break;
          if (s > 0) ready = std::max(ready, done_f[s - 1][m]);
        } else {
          if (s + 1 < stages && done_b[s + 1][m] == kNotDone) break;
          if (s + 1 < stages) ready = std::max(ready, done_b[s + 1][m]);
        }
        const double cost = op.type == PipelineOp::Type::Forward ? forward_times[s] : backward_times[s];
        free_at[s] = ready + cost;
        out.busy[s] += cost;
        (op.type == PipelineOp::Type::Forward ? done_f : done_b)[s][m] = free_at[s];
        ++next[s];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) {
      std::string stuck;
      for (int s = 0; s < stages; ++s) {
        if (next[s] < stage_ops[s].size()) {
          stuck += (stuck.empty() ? "" : ", ") + op_name(s, stage_ops[s][next[s]]);
        }
      }
      TORCH_CHECK(false, "the schedule deadlocks: every stage waits for input that never comes (",
                  stuck, ")");
    }
  }
  double total_busy = 0;
  for (int s = 0; s < stages; ++s) {
    out.makespan = std::max(out.makespan, free_at[s]);
    total_busy += out.busy[s];
    out.peak_in_flight.push_back(peak_in_flight(stage_ops[s]));
  }
  out.bubble_fraction = out.makespan > 0 ? 1.0 - total_busy / (stages * out.makespan) : 0.0;
  return out;
}

}  // namespace paisoar::pipeline
