// LayerList: a Sequential-like list of layers that ZeRO stage 3 can shard.
// LibTorch modules have no forward hooks, so stage 3 needs to own the calls:
// LayerList runs its layers in order and, once a ZeroOptimizer(stage 3) is
// attached, gathers each layer's parameters just before its forward (the next
// layer's gather prefetched meanwhile), frees them after it, and gathers them
// again just before the layer's backward (an identity autograd function on the
// layer's output). Without an attached optimizer it is a plain Sequential.
// Each layer is an amp precision region under its name, so the precision
// policy (amp.fp32_modules) can pin layers.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <vector>

#include "paisoar/zero/zero_optimizer.h"

namespace paisoar::zero {

// Limits: each layer maps one tensor to one tensor (as in Sequential); a
// parameter belongs to one layer (no weight tying across layers); every rank
// runs the same layers in the same order. Between steps the parameters of a
// stage-3 model hold no memory: read them only through a checkpoint or
// inside forward.
class LayerListImpl : public torch::nn::Module {
 public:
  // The layers of `layers`, registered under the same names (so parameter
  // names match the Sequential's).
  explicit LayerListImpl(torch::nn::Sequential layers);

  torch::Tensor forward(torch::Tensor x);
  size_t size() const { return layers_.size(); }
  std::vector<torch::Tensor> layer_parameters(size_t layer) const;
  // Called by ZeroOptimizer (stage 3); nullptr detaches.
  void attach(ZeroOptimizer::Impl* engine) { engine_ = engine; }

 private:
  std::vector<torch::nn::AnyModule> layers_;
  std::vector<std::string> names_;
  ZeroOptimizer::Impl* engine_ = nullptr;
};
TORCH_MODULE(LayerList);

}  // namespace paisoar::zero
