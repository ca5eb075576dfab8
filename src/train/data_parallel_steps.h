// DataParallelSteps: a step as train.grad_accumulation micro-batches through
// the whole model, each one forward and backward, the gradients synchronised
// (DDP or ZeRO) in the last backward only.
#pragma once

#include "src/train/micro_steps.h"

namespace paisoar::train {

class DataParallelSteps : public MicroSteps {
 public:
  // `task` must outlive this. The config's region patterns (`policy`'s, and
  // activation_checkpointing's when `checkpointing`) are checked against the
  // regions the model marks in its first forward.
  DataParallelSteps(const TrainTask& task, int64_t accumulation, const amp::PrecisionPolicy& policy,
                    bool checkpointing);

  StepOutcome run(int64_t step, StepTools& tools) override;
  std::string explain_skipped_steps(int64_t step, StepTools& tools, int64_t skipped, double scale) override;
  std::shared_ptr<torch::nn::Module> model() const override { return task_.model; }
  models::LayerSequence layers() const override { return task_.layers; }
  ForwardFn eval_forward() const override { return task_.forward; }

 private:
  // The finite-loss vote over every rank (amp::FiniteLossCheck): true when
  // every loss is finite. Otherwise the rank whose loss is not finite traces
  // it (explain_non_finite) into the error it throws (amp.skip_nonfinite
  // off) or the warning it prints (on), and it returns false.
  bool agree_finite(StepTools& tools, int64_t step, int64_t micro, const torch::Tensor& loss,
                    const data::Batch& batch);
  // "" when this rank's own loss is finite.
  std::string explain_non_finite(StepTools& tools, int64_t step, int64_t micro, const torch::Tensor& loss,
                                 const data::Batch& batch) const;

  const TrainTask& task_;
  const LossFn loss_;
  const int64_t accumulation_;
  bool policy_checked_;         // amp.fp32_modules / low_modules matched a region (or there are none)
  bool checkpointing_checked_;  // activation_checkpointing matched a region (or it is off)
  data::Batch last_batch_;      // under loss scaling: the step's last micro-batch, for explain_skipped_steps
};

}  // namespace paisoar::train
