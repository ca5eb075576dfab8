// GradSync: how the Trainer synchronises gradients, behind one face: DDP's
// GradientReducer (zero.stage 0) or a ZeroOptimizer (stages 1-3), with the
// optimizer the config names running on the whole model or on this rank's
// shard. The loop calls the same methods either way.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <optional>
#include <vector>

#include "paisoar/ddp/gradient_reducer.h"
#include "paisoar/memory/memory_report.h"
#include "paisoar/optim/grad_clip.h"
#include "paisoar/train/train_config.h"
#include "paisoar/zero/zero_optimizer.h"

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::train {

// How the global gradient norm spans a model split across ranks (pipeline
// stages, tensor-parallel shards); see hybrid::HybridMesh.
struct SplitModelNorm {
  std::shared_ptr<comm::Communicator> model_group;  // the pipeline x tensor ranks of this replica
  std::shared_ptr<comm::Communicator> world;        // ZeRO: the shards are disjoint over all ranks
  std::vector<torch::Tensor> uncounted;             // model parameters whose copy another rank counts
};

class GradSync {
 public:
  // Builds the optimizer. With ZeRO this is collective: the ZeroOptimizer
  // broadcasts rank 0's weights and shards them (restore a checkpoint after).
  // Throws ConfigError for ZeRO stage 3 on a model that is not a zero::LayerList.
  // `ranks_per_node`: ranks on one node (RunEnvironment), for DDP's
  // hierarchical averaging across nodes.
  GradSync(const TrainConfig& config, std::shared_ptr<torch::nn::Module> model,
           std::shared_ptr<comm::Communicator> comm, double lr, int ranks_per_node = 1);
  ~GradSync();

  // Collective. DDP: builds the reducer, which broadcasts rank 0's (restored)
  // weights. Call once, after a checkpoint was restored. ZeRO: nothing.
  void start();

  torch::optim::Optimizer& optimizer();
  zero::ZeroOptimizer* zero() { return zero_; }  // null at stage 0

  void zero_grad();
  void set_sync(bool on);  // false: this backward only accumulates (not the step's last micro-batch)
  void pre_forward();
  void post_forward(const std::vector<torch::Tensor>& outputs);
  // Clips the gradients to a global norm over all ranks; returns the norm.
  // `grad_scale`: the factor the gradients still hold (a GradScaler's scale
  // before unscale_), as optim::ClipGradNormOptions has it; max_norm infinity
  // only measures.
  double clip_grad_norm(double max_norm, double grad_scale = 1.0);
  // The model is split across ranks: clip_grad_norm sums over its parts.
  // Call after the constructor (ZeRO's shard exists then); sorts the
  // gradients into counted and uncounted once.
  void set_split_model_norm(const SplitModelNorm& norm);
  // DDP's stats of the last backward; ZeRO: zeros (its reduce-scatters are not timed).
  const ddp::ReducerStats& last_stats() const;

  // Parameters, gradients and optimizer state this rank holds (ZeRO: its
  // shard), the device allocator and the process's resident memory.
  memory::MemoryReport measure_memory(int rank, c10::Device device) const;

  // Collective, at the end of training. ZeRO stage 3: gathers the parameters
  // back into the model (between steps it holds none), so the model can be
  // evaluated or saved after fit(); the optimizer is gone afterwards.
  void finish();

 private:
  TrainConfig config_;
  std::shared_ptr<torch::nn::Module> model_;
  std::shared_ptr<comm::Communicator> comm_;
  int ranks_per_node_ = 1;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  zero::ZeroOptimizer* zero_ = nullptr;  // optimizer_, when ZeRO
  std::unique_ptr<ddp::GradientReducer> reducer_;
  ddp::ReducerStats no_stats_;
  // set_split_model_norm's sorting: the tensors whose gradients the norm counts,
  // and the options carrying the group and the uncounted copies.
  struct SplitClip {
    std::vector<torch::Tensor> counted;
    optim::ClipGradNormOptions options;
  };
  std::optional<SplitClip> split_;
};

}  // namespace paisoar::train
