// LayerSequence: a model as named layers run one after another. It is the one
// description of a model's structure that everything above reads: the model's
// own forward() runs it, a pipeline cuts it into stages, ZeRO-3 gathers one
// layer's parameters at a time, activation checkpointing and precision rules
// match its layer names. Each layer names the modules whose parameters it uses
// by their paths in the model, so a range of layers (part()) is a module that
// keeps the model's parameter names: "layer1.0.conv1.weight" stays that on
// every rank, whichever stage holds it.
//
//   std::vector<Layer> MyNetImpl::layers() {
//     return {{"body", {{"body", body.ptr()}}, [this](const torch::Tensor& x) { return body(x); }},
//             {"head", {{"head", head.ptr()}}, [this](const torch::Tensor& x) { return head(x); }}};
//   }
//   torch::Tensor MyNetImpl::forward(torch::Tensor x) { return models::run_layers(layers(), x); }
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace paisoar::models {

using LayerFn = std::function<torch::Tensor(const torch::Tensor&)>;

struct Layer {
  // Its region name (amp::region): precision rules, activation_checkpointing
  // patterns and ZeRO-3's gathering unit match it. Unique in a sequence.
  std::string name;
  // The modules whose parameters and buffers it uses, by their dotted paths
  // in the model ("conv1", "layer1.0", "transformer.wte"). A module may be
  // used by several layers (tied weights); none is a child of another listed one.
  std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> modules;
  // The layer's computation: one tensor in, one out.
  LayerFn forward;

  // The parameters of `modules`, each once, in their order.
  std::vector<torch::Tensor> parameters() const;
};

// Runs `layer` on `x` as region layer.name: its input cast to the region's
// precision, and taken by the thread's amp::RegionRunner when one wants it
// (activation checkpointing, ZeRO-3's gathering).
torch::Tensor run_layer(const Layer& layer, const torch::Tensor& x);
// Every layer of `layers` in order.
torch::Tensor run_layers(const std::vector<Layer>& layers, torch::Tensor x);

// A model that describes itself as layers (the reference models do).
class Layered {
 public:
  virtual ~Layered() = default;
  // The layers of the model as it is now; their functions refer to the
  // model, which must outlive them.
  virtual std::vector<Layer> layers() = 0;
};

// Layers [begin, end) of a sequence as one module: the layers' modules
// registered under the model's paths (containers made on the way, so
// named_parameters() gives "layer1.0.conv1.weight"), forward() running the
// layers in order. It shares the modules: training it trains the model.
class LayerRangeImpl : public torch::nn::Module {
 public:
  explicit LayerRangeImpl(std::vector<Layer> layers);
  torch::Tensor forward(torch::Tensor x);
  const std::vector<Layer>& layers() const { return layers_; }

 private:
  void add_module_at(const std::string& path, const std::shared_ptr<torch::nn::Module>& module);
  std::vector<Layer> layers_;
};
TORCH_MODULE(LayerRange);

class LayerSequence {
 public:
  LayerSequence() = default;  // none: the model is not described as layers
  // `model` keeps the layers' functions alive. Throws c10::ValueError for no
  // layers, a layer without a name or function, or a name given twice.
  LayerSequence(std::shared_ptr<torch::nn::Module> model, std::vector<Layer> layers);
  // A layered model's own sequence.
  template <typename Holder>
  static LayerSequence of(Holder model) {
    return LayerSequence(model.ptr(), model->layers());
  }
  // A Sequential's children as layers named by their keys ("0", "fc", ...).
  static LayerSequence of_sequential(const torch::nn::Sequential& model);

  explicit operator bool() const { return !layers_.empty(); }
  size_t size() const { return layers_.size(); }
  const Layer& layer(size_t i) const { return layers_.at(i); }
  const std::vector<Layer>& layers() const { return layers_; }
  const std::shared_ptr<torch::nn::Module>& model() const { return model_; }

  torch::Tensor forward(const torch::Tensor& x) const { return run_layers(layers_, x); }
  // Layers [begin, end) as one module (see LayerRangeImpl). Throws
  // c10::Error for an empty or out-of-range span.
  LayerRange part(size_t begin, size_t end) const;

 private:
  std::shared_ptr<torch::nn::Module> model_;
  std::vector<Layer> layers_;
};

}  // namespace paisoar::models
