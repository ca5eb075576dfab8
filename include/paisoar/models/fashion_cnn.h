// models::FashionCnn: the small reference CNN for 1x28x28 images (Fashion-MNIST,
// MNIST) used by the benchmarks and tests, in two variants: plain and with
// BatchNorm after each convolution.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "paisoar/models/layer_sequence.h"

namespace paisoar::models {

struct FashionCnnOptions {
  // Add BatchNorm2d after each convolution; the convolutions then drop their
  // bias (the norm's shift replaces it), as in ResNet.
  bool batch_norm = false;
  int64_t num_classes = 10;
};

// Architecture (N x 1 x 28 x 28 -> N x num_classes logits):
//   conv1  Conv2d(1, 32, 3, padding 1)  [+ bn1]  ReLU  MaxPool 2   -> 32 x 14 x 14
//   conv2  Conv2d(32, 64, 3, padding 1) [+ bn2]  ReLU  MaxPool 2   -> 64 x 7 x 7
//   fc1    Linear(64*7*7 = 3136, 128)  ReLU
//   fc2    Linear(128, num_classes)
// Parameters: 421,642 plain, 421,738 with batch_norm (10 classes).
// Parameter names (conv1, bn1, conv2, bn2, fc1, fc2) match the PyTorch
// definition in bench/amp_peer.py, so state dicts carry over.
// Initialisation: PyTorch's layer defaults; construction order is that of the
// Python definition, so the same seed gives the same weights on both sides.
// Layers (LayerSequence; their names are its regions): conv1 (conv1, [bn1,]
// ReLU, pool), conv2 (likewise), fc1 (flatten, fc1, ReLU), fc2; inside conv1
// and conv2 the norms are precision regions bn1 and bn2 of their own.
class FashionCnnImpl : public torch::nn::Module, public Layered {
 public:
  explicit FashionCnnImpl(const FashionCnnOptions& options = {});
  torch::Tensor forward(torch::Tensor x);
  std::vector<Layer> layers() override;

  const FashionCnnOptions& options() const { return options_; }

  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};  // null unless batch_norm
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};

 private:
  FashionCnnOptions options_;
};
TORCH_MODULE(FashionCnn);

// FashionCnn's convolution layer `name`: conv, the norm `bn` (when not null)
// as precision region `bn_name`, ReLU, a 2x2 max pool. Shared with its
// tensor-parallel variant.
Layer fashion_cnn_conv_layer(const std::string& name, torch::nn::Conv2d conv, torch::nn::BatchNorm2d bn,
                             const std::string& bn_name);

}  // namespace paisoar::models
