// ZeroOptimizer: ZeRO stages 1-3 (Rajbhandari et al. 2020) around any
// torch::optim optimizer. Each data-parallel rank keeps the optimizer state
// (and, from stage 2, the gradients; at stage 3 the parameters) of its 1/N
// shard only; the optimizer runs on that shard, and the updated shards are
// all-gathered. Usage (stages 1 and 2, any module; no DDP wrapper):
//
//   paisoar::zero::ZeroOptions o; o.stage = 2;
//   paisoar::zero::ZeroOptimizer opt(model.ptr(), comm, [](const auto& shard) {
//     return std::make_unique<torch::optim::AdamW>(paisoar::zero::tensors_of(shard),
//                                                  torch::optim::AdamWOptions(1e-3));
//   }, o);
//   opt.zero_grad();
//   scaler.scale(loss).backward();  // gradients averaged and reduce-scattered here
//   scaler.step(opt);               // the shard's step, then the all-gather
//   scaler.update();
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "paisoar/grad/no_sync.h"
#include "paisoar/optim/grad_clip.h"
#include "paisoar/zero/memory_bytes.h"
#include "paisoar/zero/options.h"
#include "paisoar/zero/shard_layout.h"

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::zero {

// One piece of this rank's shard: the part [param_begin, param_begin + numel)
// of a parameter (flattened), as a 1-D fp32 leaf whose .grad() is its averaged
// gradient. The optimizer updates it in place.
struct ShardParam {
  torch::Tensor tensor;
  std::string name;     // the model's parameter name
  size_t param = 0;     // index among the model's trainable parameters
  int64_t param_begin = 0;
};

// Builds the optimizer that runs on this rank's shard. Any torch::optim
// optimizer works; elementwise ones (SGD, Adam, AdamW, RMSprop, Adagrad) give
// exactly the unsharded numbers. Layer-wise ones (LARS, LAMB) see pieces of
// layers, so their trust ratios differ from unsharded runs (see ZERO.md).
// Param groups may be built from ShardParam::name/param (e.g. no decay for biases).
// The shard may be empty on some ranks of a tiny model.
using OptimizerFactory =
    std::function<std::unique_ptr<torch::optim::Optimizer>(const std::vector<ShardParam>&)>;

std::vector<torch::Tensor> tensors_of(const std::vector<ShardParam>& shard);

// A torch::optim::Optimizer whose param_groups() are this rank's shard, so
// GradScaler (pass it the Communicator: the inf/NaN verdict is over all
// shards), LR schedules and checkpoints work on it. Its options are copied to
// the inner optimizer at each step().
// Thread safety: one training thread; backward hooks may run on autograd's threads.
class ZeroOptimizer : public torch::optim::Optimizer {
 public:
  // Collective. Checks that every rank holds the same parameters, broadcasts
  // rank 0's parameters and buffers, moves the parameters into flat unit
  // buffers and builds the inner optimizer over this rank's shard (fp32 master
  // copies for bf16/fp16 parameters). Stage 3 needs a zero::LayerList model.
  // Throws c10::Error for a bad stage, no trainable parameters, parameters on
  // several devices, or a stage-3 model that is not a LayerList.
  ZeroOptimizer(std::shared_ptr<torch::nn::Module> model, std::shared_ptr<comm::Communicator> comm,
                OptimizerFactory factory, ZeroOptions options = {});
  ~ZeroOptimizer() override;

  // The inner optimizer's step on the shard, then the updated shards are
  // all-gathered into the model (stages 1-2; stage 3 gathers at the next forward).
  torch::Tensor step(LossClosure closure = nullptr) override;
  // Zeroes (stage 1) or releases (stages 2-3) every gradient this rank holds.
  // Call this one: torch::optim::Optimizer::zero_grad is not virtual, and
  // through a base reference it would set the shard's gradients to None
  // (step() then refuses, naming this).
  void zero_grad();

  // Gradient accumulation: while the guard lives, backward only accumulates
  // full local gradients; the next backward without it averages the sum.
  using NoSync = grad::NoSync<ZeroOptimizer>;
  NoSync no_sync() { return NoSync(*this); }
  void set_sync(bool on);
  bool sync() const;

  // Global-norm clipping over all ranks' shards (a collective); see clip_grad_norm_.
  double clip_grad_norm_(double max_norm, optim::ClipGradNormOptions options = {});

  // Stage 3 with ZeroOptions::units: unit k's parameters are gathered (the
  // next unit's prefetched) by unit_forward_begin(k) and released by
  // unit_forward_end(k); unit_backward_begin(k), called before the unit's
  // backward nodes run (from a hook on its output's gradient), gathers them
  // again and prefetches unit k-1. Any thread; every rank in the same order.
  void unit_forward_begin(size_t k);
  void unit_forward_end(size_t k);
  void unit_backward_begin(size_t k);
  // Stage 3: fn(x) between unit_forward_begin and unit_forward_end of every
  // unit in `units` (in order), its output routed through an identity
  // function whose backward calls unit_backward_begin for them, so they are
  // gathered again before fn's backward. A recomputed fn (activation
  // checkpointing) gathers them again the same way.
  torch::Tensor run_in_units(const std::vector<size_t>& units, const torch::Tensor& x,
                             const std::function<torch::Tensor(const torch::Tensor&)>& fn);

  // Bytes of parameters, gradients and optimizer state this rank holds now.
  MemoryBytes memory() const;

  int stage() const;
  const ShardLayout& layout() const;
  const std::vector<ShardParam>& shard() const;
  // The model's trainable parameters (index = ShardParam::param) and buffers.
  const std::vector<std::string>& param_names() const;
  const std::vector<std::vector<int64_t>>& param_shapes() const;
  torch::ScalarType param_dtype() const;  // the model's (the shard is fp32)
  std::vector<std::pair<std::string, torch::Tensor>> named_buffers() const;
  torch::optim::Optimizer& inner();
  const torch::optim::Optimizer& inner() const;
  std::shared_ptr<comm::Communicator> comm() const;
  // Collective: every parameter whole, gathered from all ranks' fp32 shards
  // (the model's order and shapes, fp32). For inspection and tests; stage 3
  // models hold no parameter memory between steps.
  std::vector<torch::Tensor> full_parameters();
  // Copies the master shard into the model's parameters (stages 1-2: and
  // all-gathers; collective). Call after changing shard() values (checkpoint load).
  void publish();

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace paisoar::zero
