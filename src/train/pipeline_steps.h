// PipelineSteps: a step as this rank's stage of a pipelined step over
// parallel.micro_batches micro-batches (GPipe or 1F1B); the loss, scaled for
// fp16, is computed on the last stage inside the pipeline's step. The step
// profile books the stage's forward, backward and waiting on its neighbours;
// the run ends with every stage's times and the measured bubble.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "paisoar/hybrid/hybrid_mesh.h"
#include "paisoar/pipeline/pipeline.h"
#include "src/train/micro_steps.h"
#include "src/run_summary/stage_times.h"

namespace paisoar::train {

class PipelineSteps : public MicroSteps {
 public:
  // Collective over `world`: a new run profiles task.layers on `micro_rows`
  // samples and every rank takes rank 0's cut; a resume cuts where its
  // checkpoint did (`resumed_bounds`). `scaler` must outlive this.
  PipelineSteps(const TrainTask& task, const TrainConfig& config, int64_t micro_rows, torch::Device device,
                comm::Communicator& world, hybrid::HybridMesh& mesh,
                const std::optional<std::vector<int>>& resumed_bounds, amp::GradScaler& scaler);

  StepOutcome run(int64_t step, StepTools& tools) override;
  std::shared_ptr<torch::nn::Module> model() const override { return pipe_->module().ptr(); }
  models::LayerSequence layers() const override;
  std::unique_ptr<hybrid::TiedParameters> tie() override;
  std::vector<int> cut() const override;
  std::string describe_cut() const override;
  std::string cut_plan() const override { return description_; }
  // Arms `sync` (set_sync, pre_forward) before the stage's last backward.
  void attach(GradSync& sync) override;
  ForwardFn eval_forward() const override;
  bool holds_logits() const override { return pipe_->is_last(); }
  double report_stages(RunReport& report, comm::Communicator& world) override;

 private:
  const TrainTask& task_;
  hybrid::HybridMesh& mesh_;
  pipeline::PartitionPlan plan_;
  std::string description_;  // rank 0: how the layers were split, for the log ("" elsewhere)
  std::unique_ptr<pipeline::Pipeline> pipe_;  // never null
  StageLayout layout_;
  StageTimes times_;
};

}  // namespace paisoar::train
