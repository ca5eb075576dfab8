// models::FashionCnn: layer construction (in the Python definition's order)
// and the forward pass.
#include "paisoar/models/fashion_cnn.h"

#include <c10/util/Exception.h>

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/pooling.h>

#include <stdexcept>
#include <string>

#include "paisoar/amp/precision_regions.h"

namespace paisoar::models {

namespace F = torch::nn::functional;

FashionCnnImpl::FashionCnnImpl(const FashionCnnOptions& options) : options_(options) {
  if (options.num_classes < 1) {
    C10_THROW_ERROR(ValueError, "FashionCnn: num_classes is " + std::to_string(options.num_classes) +
                                "; give at least 1");
  }
  const bool bias = !options.batch_norm;
  conv1 =
      register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3).padding(1).bias(bias)));
  if (options.batch_norm) bn1 = register_module("bn1", torch::nn::BatchNorm2d(32));
  conv2 =
      register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).padding(1).bias(bias)));
  if (options.batch_norm) bn2 = register_module("bn2", torch::nn::BatchNorm2d(64));
  fc1 = register_module("fc1", torch::nn::Linear(64 * 7 * 7, 128));
  fc2 = register_module("fc2", torch::nn::Linear(128, options.num_classes));
}

torch::Tensor FashionCnnImpl::forward(torch::Tensor x) {
  TORCH_CHECK(x.dim() == 4 && x.size(1) == 1 && x.size(2) == 28 && x.size(3) == 28,
              "FashionCnn takes N x 1 x 28 x 28 images, got ", x.sizes(),
              "; resize or pad the input to 28 x 28 with one channel");
  return run_layers(layers(), x);
}

Layer fashion_cnn_conv_layer(const std::string& name, torch::nn::Conv2d conv, torch::nn::BatchNorm2d bn,
                             const std::string& bn_name) {
  Layer layer{name, {{name, conv.ptr()}}, nullptr};
  if (bn) layer.modules.emplace_back(bn_name, bn.ptr());
  layer.forward = [conv, bn, bn_name](const torch::Tensor& in) mutable {
    torch::Tensor x = conv(in);
    if (bn) x = amp::in_region(bn_name, x, bn);
    return F::max_pool2d(torch::relu(x), F::MaxPool2dFuncOptions(2));
  };
  return layer;
}

std::vector<Layer> FashionCnnImpl::layers() {
  return {fashion_cnn_conv_layer("conv1", conv1, bn1, "bn1"), fashion_cnn_conv_layer("conv2", conv2, bn2, "bn2"),
          {"fc1", {{"fc1", fc1.ptr()}}, [fc = fc1](const torch::Tensor& x) mutable { return torch::relu(fc(x.flatten(1))); }},
          {"fc2", {{"fc2", fc2.ptr()}}, [fc = fc2](const torch::Tensor& x) mutable { return fc(x); }}};
}

}  // namespace paisoar::models
