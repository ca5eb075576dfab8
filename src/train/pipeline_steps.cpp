// PipelineSteps: the plan (stage_plan.h), the pipeline over the mesh's
// pipeline group, and a step of one pipeline call, its time split into the
// stage's forward, backward and waiting on its neighbours (communication).
#include "src/train/pipeline_steps.h"

#include <optional>

#include "paisoar/hybrid/stage_sync.h"
#include "paisoar/pipeline/stage_builder.h"
#include "src/train/stage_plan.h"

namespace paisoar::train {

PipelineSteps::PipelineSteps(const TrainTask& task, const TrainConfig& config, int64_t micro_rows,
                             torch::Device device, comm::Communicator& world, hybrid::HybridMesh& mesh,
                             const std::optional<std::vector<int>>& resumed_bounds, amp::GradScaler& scaler)
    : task_(task), mesh_(mesh) {
  plan_ = choose_plan(task, config, micro_rows, device, world, resumed_bounds, &description_);
  const pipeline::PartitionPlan& plan = plan_;
  pipeline::PipelineOptions options;
  options.micro_batches = static_cast<int>(config.parallel.micro_batches);
  options.schedule = config.parallel.schedule;
  pipe_ = std::make_unique<pipeline::Pipeline>(
      task.layers, plan, mesh.pipeline_group(),
      [&scaler, loss = loss_of(task)](const torch::Tensor& out, const torch::Tensor& y) {
        return scaler.scale(loss(out, y));
      },
      options);
  pipeline::release_other_stages(task.layers, pipe_->module());  // a stage holds its own layers only
  layout_.stage = pipe_->stage();
  layout_.stages = static_cast<int>(config.parallel.pipeline);
  layout_.micro_batches = options.micro_batches;
  layout_.schedule = pipeline::to_string(options.schedule);
}

models::LayerSequence PipelineSteps::layers() const {
  return models::LayerSequence(pipe_->module().ptr(), pipe_->module()->layers());
}

std::unique_ptr<hybrid::TiedParameters> PipelineSteps::tie() {
  return hybrid::TiedParameters::of(task_.layers, plan_, mesh_);
}

std::vector<int> PipelineSteps::cut() const {
  std::vector<int> bounds;
  for (const auto& stage : plan_.stages) bounds.push_back(stage.begin);
  bounds.push_back(plan_.stages.empty() ? 0 : plan_.stages.back().end);
  return bounds;
}

std::string PipelineSteps::describe_cut() const {
  return std::to_string(layout_.micro_batches) + " micro-batches, " + layout_.schedule + " schedule";
}

void PipelineSteps::attach(GradSync& sync) {
  hybrid::sync_in_last_backward(*pipe_, [&sync](bool on) {
    sync.set_sync(on);
    if (on) {
      sync.prepare_backward();  // the buffers were synced before the step's first forward
    } else {
      sync.pre_forward();
    }
  });
}

ForwardFn PipelineSteps::eval_forward() const {
  return [pipe = pipe_.get()](const torch::Tensor& x) { return pipe->infer(x); };
}

// One pipeline call per step: validate keeps train.grad_accumulation at 1
// here, the pipeline's micro-batches accumulate instead.
StepOutcome PipelineSteps::run(int64_t step, StepTools& t) {
  StepOutcome outcome;
  const data::Batch batch = next_batch(t, step);
  outcome.wait_s += batch.wait_s;
  torch::Tensor loss;
  {
    auto timed = t.phase(profiler::Phase::Forward);
    PrecisionContext precision(t.precision, t.regions);
    loss = pipe_->step(batch.data.to(t.device), batch.labels.to(t.device));
  }
  // The pipeline's step ran forwards and backwards interleaved, timed as one
  // forward phase: its backward passes and its waits are carved out of it.
  const pipeline::PipelineStepStats& stats = pipe_->last_step();
  t.prof.add(profiler::Phase::Backward, stats.backward_s, profiler::Phase::Forward);
  t.prof.add(profiler::Phase::Communication, stats.recv_wait_s, profiler::Phase::Forward);
  times_.add(stats);
  if (t.precision.scales_loss()) loss = loss / t.scaler.get_scale();
  if (!t.finite_loss(loss, step)) {
    outcome.skip = true;
    return outcome;
  }
  outcome.loss += loss.item<double>();
  return outcome;
}

double PipelineSteps::report_stages(RunReport& report, comm::Communicator& world) {
  const StageReport stages = report_stage_times(world, layout_, times_);
  if (!stages.table.empty()) report.message(stages.table);
  return stages.measured_bubble;
}

}  // namespace paisoar::train
