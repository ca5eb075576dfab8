// models::Mlp: a plain multilayer perceptron (Linear - ReLU [- Dropout] per
// hidden layer, then a Linear head) over flattened inputs, the simplest
// reference model for the tests and for first runs on MNIST-sized data.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "paisoar/models/layer_sequence.h"

namespace paisoar::models {

struct MlpOptions {
  // Features of one flattened sample: 784 is a 1 x 28 x 28 image.
  int64_t in_features = 784;
  // Widths of the hidden layers, in order; empty gives a linear classifier.
  std::vector<int64_t> hidden = {512, 256};
  int64_t num_classes = 10;
  // Dropout probability after each hidden layer's ReLU, in training mode only.
  double dropout = 0.0;
};

// N x ... -> N x num_classes logits, where the trailing dimensions of the
// input multiply to in_features (they are flattened).
// Children: hidden.0 .. hidden.K-1 (Linear), head (Linear); PyTorch's default
// initialisation. Parameters: sum over consecutive widths w_i, w_i+1 of
// w_i * w_i+1 + w_i+1 with widths in_features, hidden..., num_classes
// (535,818 with the defaults).
// Layers (LayerSequence; their names are its regions): hidden.0 (flatten,
// Linear, ReLU [, Dropout]) .. hidden.K-1, head.
class MlpImpl : public torch::nn::Module, public Layered {
 public:
  explicit MlpImpl(const MlpOptions& options = {});
  torch::Tensor forward(torch::Tensor x);
  std::vector<Layer> layers() override;

  const MlpOptions& options() const { return options_; }

  torch::nn::ModuleList hidden{nullptr};  // of torch::nn::Linear
  torch::nn::Linear head{nullptr};

 private:
  MlpOptions options_;
};
TORCH_MODULE(Mlp);

// Mlp's hidden layer `path`: `linear` (the module `module` computes it), ReLU,
// dropout `dropout` in training; the first one flattens its input. Shared
// with its tensor-parallel variant.
Layer mlp_hidden_layer(const std::string& path, std::shared_ptr<torch::nn::Module> module, LayerFn linear,
                       bool first, double dropout);

}  // namespace paisoar::models
