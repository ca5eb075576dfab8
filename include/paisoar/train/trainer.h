// Trainer: the training loop with every optimisation the config turns on, for
// the reference models (`paisoar train`) or a user's own model and data:
//
//   auto comm = paisoar::comm::Communicator::from_env();
//   paisoar::train::TrainConfig config = paisoar::train::load_config("my.yaml");
//   MyNet net;
//   auto task = paisoar::train::TrainTask::of(net, train_set, eval_set);
//   auto result = paisoar::train::Trainer(config, comm).fit(task);
//
// Data parallel over the communicator's ranks (DDP buckets, overlap, the
// compression hook), autocast and loss scaling, gradient accumulation, the
// optimizer with the linear scaling rule, warmup and decay, clipping, a
// non-finite loss check, the prefetching loader with distributed sampling,
// evaluation, checkpoints with automatic resume, the profiler and its advice,
// a progress bar (or progress lines) on rank 0 and metrics as JSON lines.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/types.h>

#include <functional>
#include <memory>
#include <string>

#include "paisoar/data/dataset.h"
#include "paisoar/models/layer_sequence.h"
#include "paisoar/train/train_config.h"
#include "paisoar/train/run_environment.h"

namespace paisoar::comm {
class Communicator;
}
namespace paisoar::hybrid {
class HybridMesh;
}

namespace paisoar::train {

// A model's forward (inputs -> outputs) and a loss ((outputs, labels) -> a scalar).
using ForwardFn = std::function<torch::Tensor(const torch::Tensor&)>;
using LossFn = std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>;

struct TrainTask {
  std::shared_ptr<torch::nn::Module> model;
  std::function<torch::Tensor(const torch::Tensor&)> forward;  // inputs -> logits
  std::shared_ptr<const data::Dataset> train_data;
  std::shared_ptr<const data::Dataset> eval_data;  // may be null: no evaluation
  // The model as named layers sharing task.model's modules (its
  // LayerSequence): a pipeline cuts them into stages, ZeRO stage 3 gathers
  // one layer's parameters at a time, activation_checkpointing and
  // amp.fp32_modules match their names. Needed for parallel.pipeline > 1 and
  // zero.stage 3; the zoo sets it for every reference model.
  models::LayerSequence layers;
  // (logits, labels) -> scalar loss; default cross entropy.
  std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)> loss;
  // Called on every rank after each optimizer step (and its checkpoint) with
  // the global step number; may throw to stop the run (tests use it to crash).
  std::function<void(int64_t step)> on_step;

  // A task for a ModuleHolder (`MyNet net;`) whose forward takes one tensor.
  template <typename Holder>
  static TrainTask of(Holder model, std::shared_ptr<const data::Dataset> train,
                      std::shared_ptr<const data::Dataset> eval = nullptr) {
    TrainTask t;
    t.model = model.ptr();
    t.forward = [m = model.ptr()](const torch::Tensor& x) { return m->forward(x); };
    t.train_data = std::move(train);
    t.eval_data = std::move(eval);
    return t;
  }
};

struct TrainResult {
  int64_t steps = 0;             // optimizer steps taken in this run (after any resume)
  int64_t global_step = 0;       // including the steps before a resume
  std::string resumed_from;      // the checkpoint this run started from ("": none)
  double seconds = 0;
  double samples_per_s = 0;      // global, over this run's training time (evaluation excluded)
  double final_loss = 0;         // mean of the last epoch's losses (this rank)
  double accuracy = -1;          // percent on the evaluation set; -1: none
  // Training time (evaluation excluded) until the first evaluation at or above
  // eval.target_accuracy; -1: not reached or no target.
  double time_to_target_s = -1;
  // With a pipeline: the measured bubble, 1 - the stages' compute over P x the
  // slowest stage's step (mean per step), next to (P-1)/(M+P-1); -1 without.
  double pipeline_bubble = -1;
  // This rank's peak memory predicted before the first step (memory.predict),
  // and, with profiler.memory, measured: parameters + gradients + optimizer
  // state after training plus the most one step allocated above its start.
  // -1: not predicted / measured.
  int64_t predicted_peak_bytes = -1;
  int64_t measured_peak_bytes = -1;
  // Training samples dropped as bad under data.on_error: skip, over every
  // data-parallel replica, and the samples read in all (kept and dropped).
  int64_t skipped_samples = 0;
  int64_t read_samples = 0;
};

// With parallel.pipeline or parallel.tensor > 1 (docs/PARALLEL.md) the ranks
// form a data x pipeline x tensor mesh: the loader splits the batch over the
// data dimension, a pipeline stage trains its share of task.layers, the
// model's tensor-parallel layers talk over tensor_group(), and DDP (or ZeRO
// 1-2) averages each stage's gradients over the data dimension. After fit()
// each rank's task.model holds the trained values of its own stage and shard;
// with a pipeline, the parameters and buffers of the other stages' layers
// hold no memory from the start (storage().nbytes() == 0; do not read them).
// Checkpoints hold every part (one file per stage and shard) and resume
// with the same pipeline and tensor sizes.
class Trainer {
 public:
  // Validates the config against the communicator's world size (ConfigError).
  // With model parallelism, builds the mesh: collective over `comm`.
  // `run`: what the edge read from the environment (the app:
  // RunEnvironment::from_env(comm::process_env())); the default is a single
  // rank without a launcher. The Trainer itself reads no environment variable.
  Trainer(TrainConfig config, std::shared_ptr<comm::Communicator> comm, RunEnvironment run = {});
  ~Trainer();

  // Collective: every rank calls it with the same model architecture.
  TrainResult fit(const TrainTask& task);

  // Collective: the newest checkpoint in checkpoint.dir restored into this
  // run's layout exactly as fit() resumes it (resharded from whatever layout
  // wrote it), then written to the new or empty directory `target_dir` as a
  // checkpoint of this layout at the same step, without a training step.
  // `paisoar checkpoint reshard` runs it on thread-ranks. Returns the step
  // file written. Throws c10::Error when checkpoint.dir holds no checkpoint
  // or `target_dir` cannot be written; the source is never changed.
  std::string reshard(const TrainTask& task, const std::string& target_dir);

  const TrainConfig& config() const { return config_; }
  // The group a tensor-parallel model splits its layers over (make_task's
  // argument); null without model parallelism.
  std::shared_ptr<comm::Communicator> tensor_group() const;

 private:
  TrainConfig config_;
  std::shared_ptr<comm::Communicator> comm_;
  RunEnvironment run_;
  std::shared_ptr<hybrid::HybridMesh> mesh_;  // null without model parallelism
};

}  // namespace paisoar::train
