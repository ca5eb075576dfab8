// models::Mlp: layer construction, option checks and the forward pass.
#include "paisoar/models/mlp.h"

#include <c10/util/Exception.h>

#include <torch/nn/functional/dropout.h>

#include <stdexcept>
#include <string>

#include "paisoar/amp/precision_regions.h"

namespace paisoar::models {

MlpImpl::MlpImpl(const MlpOptions& options) : options_(options) {
  if (options.in_features < 1 || options.num_classes < 1) {
    C10_THROW_ERROR(ValueError, "Mlp: in_features (" + std::to_string(options.in_features) + ") and num_classes (" +
                                std::to_string(options.num_classes) + ") must be at least 1");
  }
  if (options.dropout < 0.0 || options.dropout >= 1.0) {
    C10_THROW_ERROR(ValueError, "Mlp: dropout is " + std::to_string(options.dropout) + "; give a value in [0, 1)");
  }
  hidden = register_module("hidden", torch::nn::ModuleList());
  int64_t width = options.in_features;
  for (int64_t h : options.hidden) {
    if (h < 1) C10_THROW_ERROR(ValueError, "Mlp: every hidden width must be at least 1, got " + std::to_string(h));
    hidden->push_back(torch::nn::Linear(width, h));
    width = h;
  }
  head = register_module("head", torch::nn::Linear(width, options.num_classes));
}

torch::Tensor MlpImpl::forward(torch::Tensor x) {
  int64_t per_sample = 1;
  for (int64_t d = 1; d < x.dim(); ++d) per_sample *= x.size(d);
  TORCH_CHECK(x.dim() >= 2 && per_sample == options_.in_features, "Mlp takes N x ... inputs of ",
              options_.in_features, " features per sample, got ", x.sizes(),
              "; set MlpOptions::in_features to the per-sample size");
  return run_layers(layers(), x);
}

Layer mlp_hidden_layer(const std::string& path, std::shared_ptr<torch::nn::Module> module, LayerFn linear,
                       bool first, double dropout) {
  return {path, {{path, module}}, [module, linear, first, dropout](const torch::Tensor& in) {
            torch::Tensor x = torch::relu(linear(first ? in.flatten(1) : in));
            return dropout > 0.0 ? torch::dropout(x, dropout, module->is_training()) : x;
          }};
}

std::vector<Layer> MlpImpl::layers() {
  std::vector<Layer> out;
  for (size_t i = 0; i < hidden->size(); ++i) {
    auto linear = hidden->ptr<torch::nn::LinearImpl>(i);
    out.push_back(mlp_hidden_layer("hidden." + std::to_string(i), linear,
                                   [linear](const torch::Tensor& x) { return linear->forward(x); }, i == 0,
                                   options_.dropout));
  }
  out.push_back({"head", {{"head", head.ptr()}}, [fc = head, flatten = hidden->size() == 0](const torch::Tensor& x) mutable {
                   return fc(flatten ? x.flatten(1) : x);
                 }});
  return out;
}

}  // namespace paisoar::models
