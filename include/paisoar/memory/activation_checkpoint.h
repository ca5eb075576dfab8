// Activation checkpointing: run a segment of the model without keeping its
// activations (forward under no_grad, only the segment's input is kept) and
// recompute them in backward. Trades one extra forward of the segment for the
// memory of its activations, torch.utils.checkpoint for LibTorch.
//
//   // hand-written forward():
//   x = paisoar::memory::checkpointed(block1, x);
//   // a Sequential: wrap one child, or pick children by name pattern
//   model->push_back(paisoar::memory::Checkpointed(torch::nn::AnyModule(block)));
//   model = paisoar::memory::CheckpointPolicy({"blocks.*"}).apply(model);
//
// The recomputation sees what forward saw: the CPU generator (and the CUDA one
// of the input's device) is replayed, so dropout draws the same masks, and
// autocast is set as it was, so the same ops run in the same dtypes. The
// gradients are therefore the same as without checkpointing, bit for bit.
//
// Parameters are inputs of the checkpoint's autograd node, so their gradients
// flow through the normal graph to their accumulators: DistributedDataParallel's
// hooks fire once per parameter, in the outer backward (not reentrantly), and
// find_unused_parameters sees them as used.
//
// Caveats (as in PyTorch): a segment runs forward twice, so modules with side
// effects in forward (BatchNorm's running statistics) apply them twice; the
// parameters must not be changed in place between forward and backward (an
// error, through autograd's version counters).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/pimpl.h>

#include <functional>
#include <utility>
#include <vector>

namespace paisoar::memory {

struct ActivationCheckpointOptions {
  // Replay the RNG state of forward in the recomputation (needed for dropout
  // to draw the same masks; costs a generator state copy per segment).
  bool preserve_rng_state = true;
};

using SegmentFn = std::function<torch::Tensor(const torch::Tensor&)>;

// fn(x), with fn's activations recomputed in backward. `params` must list every
// tensor requiring grad that fn uses besides x (the parameters of the modules
// it calls): backward throws c10::Error if it finds one that is not listed,
// since its gradient would be lost. fn must be deterministic given the RNG and
// autocast state. Without grad mode, or with nothing requiring grad, this is
// just fn(x).
torch::Tensor checkpoint(const SegmentFn& fn, const torch::Tensor& x, std::vector<torch::Tensor> params,
                         const ActivationCheckpointOptions& options = {});

// A module's forward(x) checkpointed; its parameters are found for you.
// `module` is a ModuleHolder (torch::nn::Linear, TORCH_MODULE types) or a
// std::shared_ptr to a module, with forward(Tensor) -> Tensor.
template <typename ModulePtr>
torch::Tensor checkpointed(const ModulePtr& module, const torch::Tensor& x,
                           const ActivationCheckpointOptions& options = {}) {
  return checkpoint([m = module](const torch::Tensor& in) mutable { return m->forward(in); }, x,
                    module->parameters(), options);
}

// A module whose forward() is checkpointed. Transparent like amp::Pinned: the
// wrapped module's parameters, buffers and children are registered under their
// own names, so state_dict keys and optimizers see exactly the wrapped module's.
class CheckpointedImpl : public torch::nn::Module {
 public:
  // The wrapped module's forward must take one tensor and return one; forward()
  // throws c10::Error naming the module otherwise.
  explicit CheckpointedImpl(torch::nn::AnyModule module, ActivationCheckpointOptions options = {});

  torch::Tensor forward(torch::Tensor x);
  void train(bool on = true) override;
  void pretty_print(std::ostream& stream) const override;

  const torch::nn::AnyModule& module() const { return module_; }

 private:
  torch::nn::AnyModule module_;
  ActivationCheckpointOptions options_;
};
TORCH_MODULE(Checkpointed);

}  // namespace paisoar::memory
