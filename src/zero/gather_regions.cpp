// GatherRegions: the units of a layered model (one per layer, one per shared
// parameter) and the region runner that gathers them around each layer.
#include "paisoar/zero/gather_regions.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <unordered_map>

namespace paisoar::zero {
namespace {

// Each trainable parameter of `model` by its tensor.
std::unordered_map<const void*, std::string> trainable_names(const torch::nn::Module& model) {
  std::unordered_map<const void*, std::string> names;
  for (const auto& p : model.named_parameters()) {
    if (p.value().requires_grad()) names.emplace(p.value().unsafeGetTensorImpl(), p.key());
  }
  return names;
}

// For each layer, the names of its trainable parameters of `model`.
std::vector<std::vector<std::string>> layer_parameters(const models::LayerSequence& layers,
                                                       const torch::nn::Module& model) {
  const auto names = trainable_names(model);
  std::vector<std::vector<std::string>> out;
  for (const auto& layer : layers.layers()) {
    std::vector<std::string> mine;
    for (const auto& p : layer.parameters()) {
      const auto it = names.find(p.unsafeGetTensorImpl());
      if (it != names.end()) mine.push_back(it->second);
    }
    out.push_back(std::move(mine));
  }
  return out;
}

}  // namespace

std::vector<std::vector<std::string>> GatherRegions::units_of(const models::LayerSequence& layers,
                                                              const torch::nn::Module& model,
                                                              const std::vector<std::string>& alone) {
  const auto per_layer = layer_parameters(layers, model);
  std::map<std::string, int> uses;
  for (const auto& names : per_layer) {
    for (const auto& n : names) ++uses[n];
  }
  for (const auto& n : alone) {
    if (uses.count(n)) uses[n] = std::max(uses[n], 2);  // placed like a parameter several layers use
  }
  std::vector<std::vector<std::string>> units;
  std::map<std::string, bool> placed;
  for (const auto& names : per_layer) {
    std::vector<std::string> own;
    for (const auto& n : names) {
      if (uses[n] == 1) {
        own.push_back(n);
      } else if (!placed[n]) {
        units.push_back({n});  // shared by several layers: a unit of its own, at its first use
        placed[n] = true;
      }
    }
    if (!own.empty()) units.push_back(std::move(own));
  }
  for (const auto& p : model.named_parameters()) {
    TORCH_CHECK_VALUE(!p.value().requires_grad() || uses[p.key()] > 0, "ZeRO stage 3: parameter '", p.key(),
                      "' is used by none of the model's layers, so it would never be gathered; "
                      "list its module in the layer that uses it");
  }
  return units;
}

GatherRegions::GatherRegions(ZeroOptimizer& zero, const models::LayerSequence& layers, const torch::nn::Module& model)
    : zero_(zero) {
  TORCH_CHECK_VALUE(zero.stage() == 3, "GatherRegions: the ZeroOptimizer is at stage ", zero.stage(),
                    "; only stage 3 gathers parameters");
  std::map<std::string, size_t> unit_of;
  const auto& units = zero.layout().units();
  const auto& names = zero.param_names();
  for (size_t u = 0; u < units.size(); ++u) {
    for (size_t i : units[u].params) unit_of[names[i]] = u;
  }
  const auto per_layer = layer_parameters(layers, model);
  for (size_t l = 0; l < layers.size(); ++l) {
    std::vector<size_t> mine;
    for (const auto& n : per_layer[l]) {
      const auto it = unit_of.find(n);
      TORCH_CHECK_VALUE(it != unit_of.end(), "GatherRegions: parameter '", n, "' of layer '", layers.layer(l).name,
                        "' is in no unit of the ZeroOptimizer; build it with GatherRegions::units_of");
      if (std::find(mine.begin(), mine.end(), it->second) == mine.end()) mine.push_back(it->second);
    }
    std::sort(mine.begin(), mine.end());
    if (!mine.empty()) units_[layers.layer(l).name] = std::move(mine);
  }
}

bool GatherRegions::takes(const std::string& name) { return units_.count(name) > 0; }

torch::Tensor GatherRegions::run(const std::string& name, Fn fn, const torch::Tensor& x, std::vector<torch::Tensor>) {
  return zero_.run_in_units(units_.at(name), x, fn);
}

}  // namespace paisoar::zero
