// Pipeline: one rank's stage of a pipeline-parallel model. Each step splits
// the batch into M micro-batches that flow forward through the stages
// (activations sent point to point) and backward (gradients sent back) in the
// order a schedule (GPipe or 1F1B) gives, with the loss on the last stage.
#pragma once

#include <torch/nn/modules/container/sequential.h>
#include <torch/types.h>

#include <functional>
#include <memory>
#include <vector>

#include "paisoar/comm/communicator.h"
#include "paisoar/models/layer_sequence.h"
#include "paisoar/pipeline/partition.h"
#include "paisoar/pipeline/schedule.h"

namespace paisoar::pipeline {

namespace detail {
struct StageLinks;  // src/pipeline/link_shapes.h
}  // namespace detail

// loss_fn(output of the last stage for one micro-batch, that micro-batch's
// targets) -> a one-element tensor, e.g. torch::cross_entropy_loss (mean).
using LossFn = std::function<torch::Tensor(const torch::Tensor& output, const torch::Tensor& target)>;

struct PipelineOptions {
  int micro_batches = 1;                   // M: the batch is split into M chunks along dim 0
  Schedule schedule = Schedule::OneFOneB;  // see schedule.h
  // step() returns the loss on every rank (one small allgather per step, which
  // also tells every rank whether any stage failed). false: only the last stage
  // gets the loss; the others return an undefined tensor. The allgather runs either way.
  bool broadcast_loss = true;
};

// What the last step did on this rank.
struct PipelineStepStats {
  double step_s = 0;       // wall time of step()
  double forward_s = 0;    // this stage's forward passes (and the loss, on the last stage)
  double backward_s = 0;   // this stage's backward passes
  double compute_s = 0;    // forward_s + backward_s
  double recv_wait_s = 0;  // time blocked waiting for a neighbour's activation or gradient
  int peak_in_flight = 0;  // most micro-batches whose activations were held at once
  // 1 - compute / step: the share of the step this stage waited (bubble and communication).
  double idle_fraction() const { return step_s > 0 ? 1.0 - compute_s / step_s : 0.0; }
};

// Contract: every rank of `group` constructs a Pipeline (collective: the ranks
// check that their options and layer ranges agree) and calls step() the same
// number of times; group rank s runs stage s. The stages' modules, placed on
// one device each, are the caller's: Pipeline does not move or own them beyond
// holding a reference; place them before constructing it (stages on the CPU
// post their receives ahead from the last step's shapes, a choice made here).
// A step that stopped on a communication error (a timeout, a lost peer)
// leaves the links out of step: later calls throw; build a new Pipeline on a
// new group. Thread safety: one thread per Pipeline at a time.
// The group may be a subgroup of a larger world (e.g. the "pipe" dimension of a
// DeviceMesh), so data parallelism can run across pipelines.
class Pipeline {
 public:
  // Keeps this rank's span of `model`'s layers as cut by `plan` (stage =
  // group->rank()): module() is that span, with the model's parameter names.
  // Throws c10::Error when the plan's stage count is not group->size() or
  // its layers are not the model's.
  Pipeline(const models::LayerSequence& model, const PartitionPlan& plan,
           std::shared_ptr<comm::Communicator> group, LossFn loss_fn, PipelineOptions options = {});
  // The same over a Sequential's children (layers named by their keys).
  Pipeline(const torch::nn::Sequential& model, const PartitionPlan& plan,
           std::shared_ptr<comm::Communicator> group, LossFn loss_fn, PipelineOptions options = {});
  // `stage` is this rank's part of the model, already cut.
  Pipeline(torch::nn::Sequential stage, std::shared_ptr<comm::Communicator> group, LossFn loss_fn,
           PipelineOptions options = {});

  // One forward and backward of a batch. `input` is read on the first stage and
  // `target` on the last (other ranks may pass undefined tensors). Gradients
  // ACCUMULATE into this stage's parameters (.grad), equal to those of
  //   sum over micro-batches m of loss_fn(model(x_m), y_m) * rows_m / rows
  // i.e. of the whole batch's loss for a mean-reduced loss_fn; call zero_grad
  // before and the optimizer's step after, as with backward().
  // Returns that loss (0-dim, float64, on the CPU); see PipelineOptions::broadcast_loss.
  // Throws c10::Error on EVERY rank of the group when any stage failed (a
  // layer's error, shapes that do not fit the next stage, too few rows), with
  // the failing stage's message; the gradients are then undefined (zero them).
  torch::Tensor step(const torch::Tensor& input, const torch::Tensor& target);

  // Forward only, without gradients and not micro-batched (evaluation):
  // `input` is read on the first stage; returns the model's output on the last
  // stage and an undefined tensor on the others. Collective over the group;
  // throws c10::Error on every rank when any stage failed.
  torch::Tensor infer(const torch::Tensor& input);

  // Called before each op of step() with the op and its index in ops(), on
  // the step's thread: e.g. to have data-parallel gradient averaging run in
  // the stage's last backward only (paisoar/hybrid/stage_sync.h). An
  // exception from it fails the step as a layer's would.
  using OpHook = std::function<void(const PipelineOp& op, size_t index)>;
  void set_op_hook(OpHook hook) { op_hook_ = std::move(hook); }

  int stage() const { return stage_; }
  bool is_first() const { return stage_ == 0; }
  bool is_last() const { return stage_ == stages_ - 1; }
  // This stage's layers as one module, sharing the model's modules and names.
  models::LayerRange module() const { return module_; }
  std::vector<torch::Tensor> parameters() const { return module_->parameters(); }
  // This stage's op list (the schedule it runs each step).
  const std::vector<PipelineOp>& ops() const { return ops_; }
  const PipelineOptions& options() const { return options_; }
  const PipelineStepStats& last_step() const { return stats_; }

 private:
  Pipeline(models::LayerRange stage, int first_layer, int end_layer, std::shared_ptr<comm::Communicator> group,
           LossFn loss_fn, PipelineOptions options);
  void check_agreement(int first_layer, int end_layer);
  class StepRun;  // one step's state on this stage (pipeline_step.cpp)

  models::LayerRange module_;
  std::shared_ptr<comm::Communicator> group_;
  LossFn loss_fn_;
  PipelineOptions options_;
  int stage_ = 0;
  int stages_ = 1;
  std::string description_;  // "stage 1 of 3 (rank 1 of group 'world', layers 2-3)"
  std::vector<PipelineOp> ops_;
  OpHook op_hook_;
  PipelineStepStats stats_;
  // What this stage's links remember between steps. Copies of a Pipeline
  // share it, so they count as one Pipeline for the thread-safety rule.
  std::shared_ptr<detail::StageLinks> links_;
};

}  // namespace paisoar::pipeline
