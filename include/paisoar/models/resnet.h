// models::ResNet: torchvision's ResNet with BasicBlocks (ResNet-18, -34) or
// Bottlenecks (ResNet-50), the reference image models for the benchmarks and
// tests. Parameter and buffer names equal torchvision's state_dict keys, so
// weights can be exchanged.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <array>
#include <cstdint>

#include "paisoar/models/layer_sequence.h"

namespace paisoar::models {

// conv3x3 - bn - relu - conv3x3 - bn, plus the identity (or a 1x1 conv + bn
// "downsample" when the stride or width changes), then relu. Children:
// conv1, bn1, conv2, bn2[, downsample.0 (conv), downsample.1 (bn)].
class BasicBlockImpl : public torch::nn::Module {
 public:
  // Output channels per `planes`.
  static constexpr int64_t kExpansion = 1;

  BasicBlockImpl(int64_t in_planes, int64_t planes, int64_t stride);
  torch::Tensor forward(torch::Tensor x);

  // Public, as torchvision's attributes are (e.g. to re-initialise a layer).
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Sequential downsample{nullptr};  // null for the identity
};
TORCH_MODULE(BasicBlock);

// torchvision's Bottleneck (ResNet v1.5: the stride sits on the 3x3 conv):
// conv1x1 (planes) - bn - relu - conv3x3/stride (planes) - bn - relu -
// conv1x1 (4 * planes) - bn, plus the identity or the 1x1 conv + bn
// "downsample", then relu. Children: conv1, bn1, conv2, bn2, conv3, bn3
// [, downsample.0 (conv), downsample.1 (bn)].
class BottleneckImpl : public torch::nn::Module {
 public:
  // Output channels per `planes`.
  static constexpr int64_t kExpansion = 4;

  BottleneckImpl(int64_t in_planes, int64_t planes, int64_t stride);
  torch::Tensor forward(torch::Tensor x);

  // Public, as torchvision's attributes are.
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  torch::nn::Sequential downsample{nullptr};  // null for the identity
};
TORCH_MODULE(Bottleneck);

// The residual block a ResNet stacks.
enum class ResNetBlock {
  kBasic,       // BasicBlock (ResNet-18, -34)
  kBottleneck,  // Bottleneck (ResNet-50, -101, -152)
};

struct ResNetOptions {
  // Blocks in layer1..layer4: {2,2,2,2} of kBasic is ResNet-18, {3,4,6,3}
  // ResNet-34; {3,4,6,3} of kBottleneck is ResNet-50.
  std::array<int64_t, 4> blocks = {2, 2, 2, 2};
  ResNetBlock block = ResNetBlock::kBasic;
  int64_t num_classes = 1000;
  int64_t in_channels = 3;
  // Start each block's last BatchNorm (BasicBlock bn2, Bottleneck bn3) at
  // weight 0, so every residual branch starts as the identity (torchvision's
  // zero_init_residual).
  bool zero_init_residual = false;
};

// torchvision.models.resnet (v0.14), N x in_channels x H x W -> N x num_classes:
//   conv1 7x7/2 (64) - bn1 - relu - maxpool 3x3/2
//   layer1 (64) - layer2 (128, /2) - layer3 (256, /2) - layer4 (512, /2)
//   adaptive avgpool 1x1 - fc (512 * expansion inputs)
// where a layer's width is its blocks' `planes` (a Bottleneck outputs 4x that).
// Any H, W >= 32 works (the pooling is adaptive); 224 x 224 is ImageNet's.
// With 1000 classes, as torchvision's: ResNet-18 has 11,689,512 parameters,
// ResNet-50 25,557,032.
// Initialisation as torchvision: convolutions kaiming_normal_(fan_out, relu),
// BatchNorm weight 1 and bias 0, Linear PyTorch's default.
// Layers (LayerSequence; their names are its regions): conv1 (conv1, bn1 as
// a precision region of its own, ReLU, max pool), layer1.0 .. layer4.<last>
// (one block each), fc (average pool, flatten, fc).
class ResNetImpl : public torch::nn::Module, public Layered {
 public:
  explicit ResNetImpl(const ResNetOptions& options = {});
  torch::Tensor forward(torch::Tensor x);
  std::vector<Layer> layers() override;

  const ResNetOptions& options() const { return options_; }

  // Public, as torchvision's attributes are: replace `fc` (re-registering it
  // with replace_module("fc", ...)) to fine-tune for another number of classes.
  torch::nn::Conv2d conv1{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr};
  torch::nn::Sequential layer1{nullptr}, layer2{nullptr}, layer3{nullptr}, layer4{nullptr};
  torch::nn::Linear fc{nullptr};

 private:
  torch::nn::Sequential make_layer(int64_t planes, int64_t blocks, int64_t stride);

  ResNetOptions options_;
  int64_t in_planes_ = 64;  // channels entering the next block while constructing
};
TORCH_MODULE(ResNet);

// ResNet-18: ResNetOptions{} with `num_classes`.
ResNet resnet18(int64_t num_classes = 1000);

// ResNet-50: Bottleneck blocks {3, 4, 6, 3}, with `num_classes`.
ResNet resnet50(int64_t num_classes = 1000);

}  // namespace paisoar::models
