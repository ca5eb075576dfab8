// models::Vgg: torchvision's VGG (v0.14), plain or with BatchNorm, the large
// reference image model (138M parameters for VGG-16) for the benchmarks and
// tests. Parameter and buffer names equal torchvision's state_dict keys.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <vector>

#include "paisoar/models/layer_sequence.h"

namespace paisoar::models {

// In VggOptions::layers: a 2x2 max pool (torchvision's "M").
inline constexpr int64_t kVggPool = 0;

struct VggOptions {
  // The feature extractor in order: a 3x3 convolution's output channels, or
  // kVggPool. The default is torchvision's configuration "D", VGG-16.
  std::vector<int64_t> layers = {64,  64,  kVggPool, 128, 128, kVggPool, 256, 256, 256, kVggPool,
                                 512, 512, 512, kVggPool, 512, 512, 512, kVggPool};
  // BatchNorm2d after each convolution (torchvision's vgg16_bn); the
  // convolutions keep their biases, as torchvision's do.
  bool batch_norm = false;
  int64_t num_classes = 1000;
  // Dropout probability after the first two classifier layers.
  double dropout = 0.5;
};

// torchvision.models.vgg, N x 3 x H x W -> N x num_classes:
//   features    per entry of `layers`: Conv2d 3x3 pad 1 [- BatchNorm2d] - ReLU,
//               or MaxPool2d 2x2 (each child counts as one index: features.N)
//   avgpool     AdaptiveAvgPool2d (7, 7)
//   classifier  0 Linear(512*7*7, 4096) - 1 ReLU - 2 Dropout -
//               3 Linear(4096, 4096) - 4 ReLU - 5 Dropout - 6 Linear(4096, num_classes)
// The last convolution must have 512 channels. H, W must survive the pools
// (>= 32 for VGG-16); 224 x 224 is ImageNet's.
// Parameters with 1000 classes: 138,357,544 (VGG-16), 138,365,992 (VGG-16-BN).
// Initialisation as torchvision: convolutions kaiming_normal_(fan_out, relu)
// with zero bias, BatchNorm weight 1 and bias 0, Linear normal(0, 0.01) with
// zero bias; construction order is torchvision's, so seeded weights agree.
// Layers (LayerSequence; their names are its regions): features.<i> for each
// convolution i with the norm, ReLU and pool after it, then classifier.0
// (average pool, flatten, Linear, ReLU, Dropout), classifier.3, classifier.6.
class VggImpl : public torch::nn::Module, public Layered {
 public:
  explicit VggImpl(const VggOptions& options = {});
  torch::Tensor forward(torch::Tensor x);
  std::vector<Layer> layers() override;

  const VggOptions& options() const { return options_; }

  torch::nn::Sequential features{nullptr};
  torch::nn::AdaptiveAvgPool2d avgpool{nullptr};
  torch::nn::Sequential classifier{nullptr};

 private:
  VggOptions options_;
  int64_t min_side_ = 1;  // smallest H, W the pools accept: 2^pools
};
TORCH_MODULE(Vgg);

// VGG-16 (configuration "D"), with BatchNorm when `batch_norm` (vgg16_bn).
Vgg vgg16(int64_t num_classes = 1000, bool batch_norm = false);

}  // namespace paisoar::models
