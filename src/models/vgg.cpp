// models::Vgg: the feature and classifier stacks, built and initialised in
// torchvision's order so names, shapes and the seeded weights agree.
#include "paisoar/models/vgg.h"

#include <c10/util/Exception.h>

#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>

#include <stdexcept>
#include <string>

#include "paisoar/amp/precision_regions.h"

namespace paisoar::models {

VggImpl::VggImpl(const VggOptions& options) : options_(options) {
  if (options.num_classes < 1) {
    C10_THROW_ERROR(ValueError, "Vgg: num_classes is " + std::to_string(options.num_classes) + "; give at least 1");
  }
  if (options.dropout < 0.0 || options.dropout >= 1.0) {
    C10_THROW_ERROR(ValueError, "Vgg: dropout is " + std::to_string(options.dropout) + "; give a value in [0, 1)");
  }
  torch::nn::Sequential stack;
  int64_t channels = 3;
  for (int64_t entry : options.layers) {
    if (entry == kVggPool) {
      min_side_ *= 2;
      stack->push_back(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2).stride(2)));
      continue;
    }
    if (entry < 0) C10_THROW_ERROR(ValueError, "Vgg: layer widths must be positive, or kVggPool for a pool");
    stack->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, entry, 3).padding(1)));
    if (options.batch_norm) stack->push_back(torch::nn::BatchNorm2d(entry));
    stack->push_back(torch::nn::ReLU(torch::nn::ReLUOptions(/*inplace=*/true)));
    channels = entry;
  }
  if (channels != 512) {
    C10_THROW_ERROR(ValueError, "Vgg: the last convolution has " + std::to_string(channels) +
                                " channels; the classifier takes 512");
  }
  features = register_module("features", stack);
  avgpool = register_module("avgpool", torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions({7, 7})));
  classifier = register_module(
      "classifier",
      torch::nn::Sequential(torch::nn::Linear(512 * 7 * 7, 4096), torch::nn::ReLU(torch::nn::ReLUOptions(true)),
                            torch::nn::Dropout(options.dropout), torch::nn::Linear(4096, 4096),
                            torch::nn::ReLU(torch::nn::ReLUOptions(true)), torch::nn::Dropout(options.dropout),
                            torch::nn::Linear(4096, options.num_classes)));

  // torchvision's loop over self.modules(): depth-first, parents first.
  torch::NoGradGuard no_grad;
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* c = m->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(c->weight, 0, torch::kFanOut, torch::kReLU);
      torch::nn::init::zeros_(c->bias);
    } else if (auto* bn = m->as<torch::nn::BatchNorm2d>()) {
      torch::nn::init::ones_(bn->weight);
      torch::nn::init::zeros_(bn->bias);
    } else if (auto* fc = m->as<torch::nn::Linear>()) {
      torch::nn::init::normal_(fc->weight, 0, 0.01);
      torch::nn::init::zeros_(fc->bias);
    }
  }
}

torch::Tensor VggImpl::forward(torch::Tensor x) {
  TORCH_CHECK(x.dim() == 4 && x.size(1) == 3 && x.size(2) >= min_side_ && x.size(3) >= min_side_,
              "Vgg takes N x 3 x H x W images with H, W >= ", min_side_, " (one halving per pool), got ", x.sizes());
  return run_layers(layers(), x);
}

namespace {

// `seq`'s children grouped into layers: each child of type Head starts one,
// the children after it up to the next join it. `prefix` names the paths.
template <typename Head>
std::vector<Layer> grouped_layers(const torch::nn::Sequential& seq, const std::string& prefix) {
  std::vector<Layer> out;
  std::vector<torch::nn::AnyModule> group;
  const auto close = [&] {
    if (group.empty()) return;
    out.back().forward = [group](const torch::Tensor& in) mutable {
      torch::Tensor x = in;
      for (auto& m : group) x = m.forward(x);
      return x;
    };
    group.clear();
  };
  for (size_t i = 0; i < seq->size(); ++i) {
    torch::nn::AnyModule child = seq->begin()[i];
    const std::string path = prefix + "." + std::to_string(i);
    if (child.ptr()->as<Head>() != nullptr || out.empty()) {
      close();
      out.push_back({path, {}, nullptr});
    }
    out.back().modules.emplace_back(path, child.ptr());
    group.push_back(child);
  }
  close();
  return out;
}

}  // namespace

std::vector<Layer> VggImpl::layers() {
  std::vector<Layer> out = grouped_layers<torch::nn::Conv2dImpl>(features, "features");
  std::vector<Layer> head = grouped_layers<torch::nn::LinearImpl>(classifier, "classifier");
  // The average pool and the flatten go before the first Linear.
  head.front().modules.insert(head.front().modules.begin(), {"avgpool", avgpool.ptr()});
  head.front().forward = [pool = avgpool, first = head.front().forward](const torch::Tensor& x) mutable {
    return first(pool(x).flatten(1));
  };
  out.insert(out.end(), head.begin(), head.end());
  return out;
}

Vgg vgg16(int64_t num_classes, bool batch_norm) {
  VggOptions options;
  options.num_classes = num_classes;
  options.batch_norm = batch_norm;
  return Vgg(options);
}

}  // namespace paisoar::models
