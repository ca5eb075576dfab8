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
#include <torch/types.h>

#include <functional>
#include <memory>
#include <string>

#include "paisoar/data/dataset.h"
#include "paisoar/train/train_config.h"

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::train {

struct TrainTask {
  std::shared_ptr<torch::nn::Module> model;
  std::function<torch::Tensor(const torch::Tensor&)> forward;  // inputs -> logits
  std::shared_ptr<const data::Dataset> train_data;
  std::shared_ptr<const data::Dataset> eval_data;  // may be null: no evaluation
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
};

class Trainer {
 public:
  // Validates the config against the communicator's world size (ConfigError).
  Trainer(TrainConfig config, std::shared_ptr<comm::Communicator> comm);

  // Collective: every rank calls it with the same model architecture.
  TrainResult fit(const TrainTask& task);

  const TrainConfig& config() const { return config_; }

 private:
  TrainConfig config_;
  std::shared_ptr<comm::Communicator> comm_;
};

}  // namespace paisoar::train
