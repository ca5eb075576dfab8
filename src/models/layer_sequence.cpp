// LayerSequence: running layers as regions, and a span of them as a module
// that keeps the model's parameter names.
#include "paisoar/models/layer_sequence.h"

#include <c10/util/Exception.h>

#include <set>
#include <unordered_set>

#include "paisoar/amp/precision_regions.h"

namespace paisoar::models {

std::vector<torch::Tensor> Layer::parameters() const {
  std::vector<torch::Tensor> out;
  std::unordered_set<const void*> seen;
  for (const auto& [path, module] : modules) {
    for (const auto& p : module->parameters()) {
      if (seen.insert(p.unsafeGetTensorImpl()).second) out.push_back(p);
    }
  }
  return out;
}

torch::Tensor run_layer(const Layer& layer, const torch::Tensor& x) {
  auto pin = amp::region(layer.name);
  amp::RegionRunner* runner = amp::detail::active_region_runner();
  if (runner != nullptr && runner->takes(layer.name)) {
    return runner->run(layer.name, layer.forward, pin.cast(x), layer.parameters());
  }
  return layer.forward(pin.cast(x));
}

torch::Tensor run_layers(const std::vector<Layer>& layers, torch::Tensor x) {
  for (const auto& layer : layers) x = run_layer(layer, x);
  return x;
}

LayerRangeImpl::LayerRangeImpl(std::vector<Layer> layers) : torch::nn::Module("LayerRange"), layers_(std::move(layers)) {
  std::set<std::string> added;
  for (const auto& layer : layers_) {
    for (const auto& [path, module] : layer.modules) {
      if (added.insert(path).second) add_module_at(path, module);
    }
  }
}

void LayerRangeImpl::add_module_at(const std::string& path, const std::shared_ptr<torch::nn::Module>& module) {
  torch::nn::Module* parent = this;
  size_t start = 0;
  for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', start)) {
    const std::string name = path.substr(start, dot - start);
    auto children = parent->named_children();
    std::shared_ptr<torch::nn::Module> next;
    if (const auto* found = children.find(name)) {
      next = *found;
    } else {
      next = parent->register_module(name, std::make_shared<torch::nn::Module>(name));
    }
    parent = next.get();
    start = dot + 1;
  }
  parent->register_module(path.substr(start), module);
}

torch::Tensor LayerRangeImpl::forward(torch::Tensor x) { return run_layers(layers_, std::move(x)); }

LayerSequence::LayerSequence(std::shared_ptr<torch::nn::Module> model, std::vector<Layer> layers)
    : model_(std::move(model)), layers_(std::move(layers)) {
  TORCH_CHECK_VALUE(!layers_.empty(), "LayerSequence: a model needs at least one layer");
  std::set<std::string> names;
  for (const auto& layer : layers_) {
    TORCH_CHECK_VALUE(!layer.name.empty() && layer.forward, "LayerSequence: every layer needs a name and a forward");
    TORCH_CHECK_VALUE(names.insert(layer.name).second, "LayerSequence: two layers are named '", layer.name,
                      "'; each layer's name must be unique (it is its region)");
  }
}

LayerSequence LayerSequence::of_sequential(const torch::nn::Sequential& model) {
  TORCH_CHECK_VALUE(model && !model->is_empty(), "LayerSequence: the Sequential is null or empty");
  std::vector<Layer> layers;
  const auto children = model->named_children();
  for (size_t i = 0; i < model->size(); ++i) {
    torch::nn::AnyModule any = model->begin()[i];
    layers.push_back({children[i].key(), {{children[i].key(), any.ptr()}},
                      [any](const torch::Tensor& x) mutable { return any.forward(x); }});
  }
  return LayerSequence(model.ptr(), std::move(layers));
}

LayerRange LayerSequence::part(size_t begin, size_t end) const {
  TORCH_CHECK(begin < end && end <= layers_.size(), "LayerSequence: layers [", begin, ", ", end,
              ") are not a span of the model's ", layers_.size(), " layers");
  return LayerRange(std::vector<Layer>(layers_.begin() + static_cast<std::ptrdiff_t>(begin),
                                       layers_.begin() + static_cast<std::ptrdiff_t>(end)));
}

}  // namespace paisoar::models
