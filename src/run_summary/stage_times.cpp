// StageTimes and the per-stage table: one allgather of five numbers a rank.
#include "src/run_summary/stage_times.h"

#include <torch/torch.h>

#include <cstdio>
#include <vector>

#include "paisoar/pipeline/bubble.h"

namespace paisoar::train {
namespace {

constexpr int kFields = 5;  // stage, step, forward, backward, waiting (seconds)

void accumulate(pipeline::PipelineStepStats& into, const pipeline::PipelineStepStats& s, double sign) {
  into.step_s += sign * s.step_s;
  into.forward_s += sign * s.forward_s;
  into.backward_s += sign * s.backward_s;
  into.compute_s += sign * s.compute_s;
  into.recv_wait_s += sign * s.recv_wait_s;
}

pipeline::PipelineStepStats scaled(pipeline::PipelineStepStats s, double factor) {
  pipeline::PipelineStepStats out;
  accumulate(out, s, factor);
  return out;
}

std::string format_rows(const StageLayout& layout, const std::vector<pipeline::PipelineStepStats>& stages,
                        const std::vector<int>& ranks, int64_t steps, double bubble) {
  std::string text;
  char line[192];
  std::snprintf(line, sizeof line,
                "pipeline per stage (%s, %d stages, %d micro-batches; ms per step, mean of %lld steps):\n",
                layout.schedule.c_str(), layout.stages, layout.micro_batches, static_cast<long long>(steps));
  text += line;
  text += "  stage  ranks   forward  backward   waiting     other      step   idle\n";
  for (size_t s = 0; s < stages.size(); ++s) {
    const auto& t = stages[s];
    const double other = t.step_s - t.compute_s - t.recv_wait_s;
    std::snprintf(line, sizeof line, "  %5zu  %5d  %8.2f  %8.2f  %8.2f  %8.2f  %8.2f  %4.1f%%\n", s, ranks[s],
                  t.forward_s * 1e3, t.backward_s * 1e3, t.recv_wait_s * 1e3, other * 1e3, t.step_s * 1e3,
                  100.0 * t.idle_fraction());
    text += line;
  }
  std::snprintf(line, sizeof line,
                "  bubble: %.1f%% measured (1 - compute / (P x the slowest step)), (P-1)/(M+P-1) = %.1f%%; "
                "waiting = the bubble + transfers + stage imbalance",
                100.0 * bubble, 100.0 * pipeline::bubble_formula(layout.stages, layout.micro_batches));
  text += line;
  return text;
}

}  // namespace

void StageTimes::add(const pipeline::PipelineStepStats& step) {
  if (steps_ == 1 && !first_dropped_) {
    sum_ = pipeline::PipelineStepStats{};  // the first step was a warm-up: keep the second on
    first_dropped_ = true;
    steps_ = 0;
  }
  accumulate(sum_, step, 1.0);
  ++steps_;
}

pipeline::PipelineStepStats StageTimes::mean() const {
  return steps_ > 0 ? scaled(sum_, 1.0 / static_cast<double>(steps_)) : pipeline::PipelineStepStats{};
}

StageReport report_stage_times(comm::Communicator& world, const StageLayout& layout, const StageTimes& times) {
  const pipeline::PipelineStepStats mine = times.mean();
  torch::Tensor local = torch::tensor({static_cast<double>(layout.stage), mine.step_s, mine.forward_s,
                                       mine.backward_s, mine.recv_wait_s},
                                      torch::kFloat64);
  torch::Tensor all = torch::empty({world.size() * kFields}, torch::kFloat64);
  world.allgather_into(all, local).wait();
  const double* v = all.data_ptr<double>();

  std::vector<pipeline::PipelineStepStats> stages(layout.stages);
  std::vector<int> ranks(layout.stages, 0);
  for (int64_t r = 0; r < world.size(); ++r) {
    const double* f = v + r * kFields;
    const int s = static_cast<int>(f[0]);
    TORCH_CHECK(s >= 0 && s < layout.stages, "Trainer: rank ", r, " reported pipeline stage ", s, " of ",
                layout.stages);
    pipeline::PipelineStepStats t;
    t.step_s = f[1];
    t.forward_s = f[2];
    t.backward_s = f[3];
    t.compute_s = f[2] + f[3];
    t.recv_wait_s = f[4];
    accumulate(stages[s], t, 1.0);
    ++ranks[s];
  }
  for (int s = 0; s < layout.stages; ++s) {
    if (ranks[s] > 0) stages[s] = scaled(stages[s], 1.0 / ranks[s]);
  }
  StageReport report;
  report.measured_bubble = pipeline::measured_bubble(stages);
  if (world.rank() == 0) report.table = format_rows(layout, stages, ranks, times.steps(), report.measured_bubble);
  return report;
}

}  // namespace paisoar::train
