// LayerList: the layers in order, each a precision region and run through the
// stage-3 engine when one is attached.
#include "paisoar/zero/layer_list.h"

#include <torch/torch.h>

#include "paisoar/amp/precision_regions.h"
#include "src/zero/zero_impl.h"

namespace paisoar::zero {

LayerListImpl::LayerListImpl(torch::nn::Sequential layers) {
  TORCH_CHECK(!layers.is_empty(), "LayerList needs a Sequential");
  const auto children = layers->named_children();
  size_t k = 0;
  for (const auto& layer : *layers) {
    register_module(children[k].key(), layer.ptr());
    layers_.push_back(layer);
    names_.push_back(children[k].key());
    ++k;
  }
}

std::vector<torch::Tensor> LayerListImpl::layer_parameters(size_t layer) const {
  return layers_.at(layer).ptr()->parameters();
}

torch::Tensor LayerListImpl::forward(torch::Tensor x) {
  for (size_t k = 0; k < layers_.size(); ++k) {
    auto& layer = layers_[k];
    auto pin = amp::region(names_[k]);
    x = pin.cast(x);
    if (engine_) {
      x = engine_->run_in_units({k}, x, [&layer](const torch::Tensor& in) { return layer.forward(in); });
    } else {
      x = layer.forward(x);
    }
  }
  return x;
}

}  // namespace paisoar::zero
