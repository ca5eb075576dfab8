// GradSync: how the Trainer synchronises gradients, one interface with two
// implementations: DdpSync (nothing sharded over the data ranks: DDP's
// GradientReducer, the optimizer on the whole model; ddp_sync.cpp) and
// ZeroSync (optimizer state sharded, and gradients and parameters as the
// placements say: a ZeroOptimizer, the optimizer on this rank's shard;
// zero_sync.cpp). The loop calls the same methods either way; make_grad_sync
// picks one from the placements' data sharding.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <optional>
#include <vector>

#include "paisoar/amp/precision_regions.h"
#include "paisoar/ddp/gradient_reducer.h"
#include "paisoar/layout/placements.h"
#include "paisoar/models/layer_sequence.h"
#include "paisoar/memory/memory_report.h"
#include "paisoar/optim/grad_clip.h"
#include "paisoar/train/train_config.h"
#include "paisoar/zero/zero_optimizer.h"

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::train {

// What GradSync is built from: RunPlan::sync, derived once from the config.
struct SyncPlan {
  OptimizerConfig optimizer;
  double lr = 0;                 // optimizer.lr scaled to the global batch
  layout::DataSharding sharding;  // what is sharded over the data ranks (none: DDP)
  ddp::DdpOptions ddp;           // nothing sharded
  zero::ZeroOptions zero;        // something sharded (its stage and units filled in by ZeroSync)
};

// How the global gradient norm spans a model split across ranks (pipeline
// stages, tensor-parallel shards); see hybrid::HybridMesh.
struct SplitModelNorm {
  std::shared_ptr<comm::Communicator> model_group;  // the pipeline x tensor ranks of this replica
  std::shared_ptr<comm::Communicator> world;        // ZeRO: the shards are disjoint over all ranks
  std::vector<torch::Tensor> uncounted;             // model parameters whose copy another rank counts
};

class GradSync {
 public:
  virtual ~GradSync() = default;

  // Collective. DDP: builds the reducer, which broadcasts rank 0's (restored)
  // weights. Call once, after a checkpoint was restored. ZeRO: nothing.
  virtual void start() {}

  virtual torch::optim::Optimizer& optimizer() = 0;
  // The ZeroOptimizer holding this rank's shard of the state, for a
  // checkpoint to read and write it; null when the state is whole.
  virtual zero::ZeroOptimizer* zero() { return nullptr; }
  // The runner every forward must run the model's layer regions through
  // (ZeRO-3 gathers each layer's parameters there); null for none.
  virtual amp::RegionRunner* gathering() { return nullptr; }
  // This rank's gradient of the model's parameter `name` after a step's
  // backward: the whole gradient, or the pieces of it this rank's shard holds.
  virtual std::vector<torch::Tensor> held_gradients(const std::string& name) = 0;

  virtual void zero_grad() = 0;
  virtual void set_sync(bool on) = 0;  // false: this backward only accumulates (not the step's last micro-batch)
  virtual void pre_forward() {}
  // Arms the coming backward without touching the buffers (a pipeline
  // stage's last backward, after the step's forwards).
  virtual void prepare_backward() {}
  virtual void post_forward(const std::vector<torch::Tensor>& outputs) { (void)outputs; }

  // Clips the gradients to a global norm over all ranks; returns the norm.
  // `grad_scale`: the factor the gradients still hold (a GradScaler's scale
  // before unscale_), as optim::ClipGradNormOptions has it; max_norm infinity
  // only measures.
  double clip_grad_norm(double max_norm, double grad_scale = 1.0);
  // The model is split across ranks: clip_grad_norm sums over its parts.
  // Call after construction (ZeRO's shard exists then); sorts the gradients
  // into counted and uncounted once.
  void set_split_model_norm(const SplitModelNorm& norm);

  // DDP's stats of the last backward; ZeRO: zeros (its reduce-scatters are not timed).
  virtual const ddp::ReducerStats& last_stats() const { return no_stats_; }

  // Parameters, gradients and optimizer state this rank holds (ZeRO: its
  // shard), the device allocator and the process's resident memory.
  virtual memory::MemoryReport measure_memory(int rank, c10::Device device) const = 0;

  // Collective, at the end of training. ZeRO stage 3: gathers the parameters
  // back into the model (between steps it holds none), so the model can be
  // evaluated or saved after fit(); the optimizer is gone afterwards.
  virtual void finish() {}

 protected:
  // The gradients clip_grad_norm counts on an unsplit model, and its norm.
  virtual double clip_whole(double max_norm, const optim::ClipGradNormOptions& options) = 0;
  // set_split_model_norm's sorting: the tensors whose gradients the norm
  // counts (the rest into options.uncounted) and the group it sums over.
  struct SplitClip {
    std::vector<torch::Tensor> counted;
    optim::ClipGradNormOptions options;
  };
  virtual SplitClip split_clip(const SplitModelNorm& norm) const = 0;

 private:
  std::optional<SplitClip> split_;
  ddp::ReducerStats no_stats_;
};

// DdpSync when nothing is sharded over the data ranks, else ZeroSync.
// `layers` are `model`'s (a pipeline stage's span); ZeRO takes one unit per
// layer from them (needed when parameters are sharded), and one for each
// parameter in `tied` (held by other stages too: sharded alike on each).
// ZeroSync's constructor is collective (the ZeroOptimizer broadcasts rank
// 0's weights and shards them; restore a checkpoint after); it throws
// ConfigError when parameters are sharded and `layers` is empty.
std::unique_ptr<GradSync> make_grad_sync(const SyncPlan& plan, std::shared_ptr<torch::nn::Module> model,
                                         const models::LayerSequence& layers, const std::vector<std::string>& tied,
                                         std::shared_ptr<comm::Communicator> comm);

// The two implementations (ddp_sync.cpp, zero_sync.cpp).
std::unique_ptr<GradSync> make_ddp_sync(const SyncPlan& plan, std::shared_ptr<torch::nn::Module> model,
                                        std::shared_ptr<comm::Communicator> comm);
std::unique_ptr<GradSync> make_zero_sync(const SyncPlan& plan, std::shared_ptr<torch::nn::Module> model,
                                         const models::LayerSequence& layers, const std::vector<std::string>& tied,
                                         std::shared_ptr<comm::Communicator> comm);

}  // namespace paisoar::train
