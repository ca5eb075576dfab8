// models::ResNet: BasicBlock, Bottleneck and the network, built and
// initialised in torchvision's order so names, shapes and the seeded weights
// agree.
#include "paisoar/models/resnet.h"

#include <c10/util/Exception.h>

#include <torch/nn/functional/pooling.h>
#include <torch/nn/init.h>

#include <stdexcept>
#include <string>

#include "paisoar/amp/precision_regions.h"

namespace paisoar::models {
namespace {

namespace F = torch::nn::functional;

torch::nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

// The 1x1 conv + bn projecting a block's input to its output when the stride
// or the width changes; null (the identity) otherwise. torchvision builds it
// before the block (in _make_layer) and the block registers it last: the same
// order of random draws and of state_dict keys.
torch::nn::Sequential make_shortcut(int64_t in_planes, int64_t out_planes, int64_t stride) {
  if (stride == 1 && in_planes == out_planes) return nullptr;
  return torch::nn::Sequential(conv(in_planes, out_planes, 1, stride), torch::nn::BatchNorm2d(out_planes));
}

}  // namespace

BasicBlockImpl::BasicBlockImpl(int64_t in_planes, int64_t planes, int64_t stride) {
  auto shortcut = make_shortcut(in_planes, planes * kExpansion, stride);
  conv1 = register_module("conv1", conv(in_planes, planes, 3, stride));
  bn1 = register_module("bn1", torch::nn::BatchNorm2d(planes));
  conv2 = register_module("conv2", conv(planes, planes, 3, 1));
  bn2 = register_module("bn2", torch::nn::BatchNorm2d(planes));
  if (shortcut) downsample = register_module("downsample", shortcut);
}

torch::Tensor BasicBlockImpl::forward(torch::Tensor x) {
  auto out = torch::relu(bn1(conv1(x)));
  out = bn2(conv2(out));
  out += downsample ? downsample->forward(x) : x;
  return torch::relu(out);
}

BottleneckImpl::BottleneckImpl(int64_t in_planes, int64_t planes, int64_t stride) {
  auto shortcut = make_shortcut(in_planes, planes * kExpansion, stride);
  conv1 = register_module("conv1", conv(in_planes, planes, 1, 1));
  bn1 = register_module("bn1", torch::nn::BatchNorm2d(planes));
  conv2 = register_module("conv2", conv(planes, planes, 3, stride));
  bn2 = register_module("bn2", torch::nn::BatchNorm2d(planes));
  conv3 = register_module("conv3", conv(planes, planes * kExpansion, 1, 1));
  bn3 = register_module("bn3", torch::nn::BatchNorm2d(planes * kExpansion));
  if (shortcut) downsample = register_module("downsample", shortcut);
}

torch::Tensor BottleneckImpl::forward(torch::Tensor x) {
  auto out = torch::relu(bn1(conv1(x)));
  out = torch::relu(bn2(conv2(out)));
  out = bn3(conv3(out));
  out += downsample ? downsample->forward(x) : x;
  return torch::relu(out);
}

ResNetImpl::ResNetImpl(const ResNetOptions& options) : options_(options) {
  for (int64_t b : options.blocks) {
    if (b < 1) C10_THROW_ERROR(ValueError, "ResNet: every layer needs at least one block");
  }
  if (options.num_classes < 1 || options.in_channels < 1) {
    C10_THROW_ERROR(ValueError, "ResNet: num_classes and in_channels must be at least 1");
  }
  conv1 = register_module(
      "conv1", torch::nn::Conv2d(
                   torch::nn::Conv2dOptions(options.in_channels, 64, 7).stride(2).padding(3).bias(false)));
  bn1 = register_module("bn1", torch::nn::BatchNorm2d(64));
  layer1 = register_module("layer1", make_layer(64, options.blocks[0], 1));
  layer2 = register_module("layer2", make_layer(128, options.blocks[1], 2));
  layer3 = register_module("layer3", make_layer(256, options.blocks[2], 2));
  layer4 = register_module("layer4", make_layer(512, options.blocks[3], 2));
  fc = register_module("fc", torch::nn::Linear(in_planes_, options.num_classes));

  // torchvision's loop over self.modules(): depth-first, parents first.
  torch::NoGradGuard no_grad;
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* c = m->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(c->weight, 0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = m->as<torch::nn::BatchNorm2d>()) {
      torch::nn::init::ones_(bn->weight);
      torch::nn::init::zeros_(bn->bias);
    }
  }
  if (options.zero_init_residual) {
    for (auto& m : modules(/*include_self=*/false)) {
      if (auto* basic = m->as<BasicBlock>()) torch::nn::init::zeros_(basic->bn2->weight);
      if (auto* bottleneck = m->as<Bottleneck>()) torch::nn::init::zeros_(bottleneck->bn3->weight);
    }
  }
}

torch::nn::Sequential ResNetImpl::make_layer(int64_t planes, int64_t blocks, int64_t stride) {
  torch::nn::Sequential layer;
  for (int64_t i = 0; i < blocks; ++i) {
    const int64_t s = i == 0 ? stride : 1;  // only a layer's first block strides
    if (options_.block == ResNetBlock::kBottleneck) {
      layer->push_back(Bottleneck(in_planes_, planes, s));
      in_planes_ = planes * BottleneckImpl::kExpansion;
    } else {
      layer->push_back(BasicBlock(in_planes_, planes, s));
      in_planes_ = planes * BasicBlockImpl::kExpansion;
    }
  }
  return layer;
}

torch::Tensor ResNetImpl::forward(torch::Tensor x) {
  TORCH_CHECK(x.dim() == 4 && x.size(1) == options_.in_channels, "ResNet takes N x ", options_.in_channels,
              " x H x W images, got ", x.sizes());
  return run_layers(layers(), x);
}

std::vector<Layer> ResNetImpl::layers() {
  std::vector<Layer> out;
  out.push_back({"conv1", {{"conv1", conv1.ptr()}, {"bn1", bn1.ptr()}},
                 [conv = conv1, bn = bn1](const torch::Tensor& in) mutable {
                   torch::Tensor x = torch::relu(amp::in_region("bn1", conv(in), bn));
                   return F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2).padding(1));
                 }});
  const std::pair<const char*, torch::nn::Sequential*> stages[] = {
      {"layer1", &layer1}, {"layer2", &layer2}, {"layer3", &layer3}, {"layer4", &layer4}};
  for (const auto& [name, stage] : stages) {
    for (size_t i = 0; i < (*stage)->size(); ++i) {
      torch::nn::AnyModule block = (*stage)->begin()[i];
      const std::string path = std::string(name) + "." + std::to_string(i);
      out.push_back({path, {{path, block.ptr()}}, [block](const torch::Tensor& x) mutable { return block.forward(x); }});
    }
  }
  out.push_back({"fc", {{"fc", fc.ptr()}}, [linear = fc](const torch::Tensor& x) mutable {
                   return linear(F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions(1)).flatten(1));
                 }});
  return out;
}

ResNet resnet18(int64_t num_classes) {
  ResNetOptions options;
  options.num_classes = num_classes;
  return ResNet(options);
}

ResNet resnet50(int64_t num_classes) {
  ResNetOptions options;
  options.blocks = {3, 4, 6, 3};
  options.block = ResNetBlock::kBottleneck;
  options.num_classes = num_classes;
  return ResNet(options);
}

}  // namespace paisoar::models
