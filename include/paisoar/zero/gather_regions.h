// GatherRegions: ZeRO stage 3 for a model described as layers
// (models::LayerSequence), whatever its module tree. Each layer's parameters
// are one unit (a parameter several layers use, such as a tied embedding, a
// unit of its own), and while the runner is active on the thread (through
// amp::ActiveRegionRunner) every layer region gathers its units around its
// forward and again before its backward. Under activation checkpointing
// (amp::RegionChain with this runner innermost) a recomputed layer gathers
// them again.
//
//   ZeroOptions o; o.stage = 3; o.units = GatherRegions::units_of(layers, *model);
//   ZeroOptimizer zero(model, comm, factory, o);
//   GatherRegions gather(zero, layers, *model);
//   { amp::ActiveRegionRunner active(gather); loss = loss_fn(layers.forward(x), y); }
//   loss.backward();
#pragma once

#include <map>
#include <string>
#include <vector>

#include "paisoar/amp/precision_regions.h"
#include "paisoar/models/layer_sequence.h"
#include "paisoar/zero/zero_optimizer.h"

namespace paisoar::zero {

class GatherRegions : public amp::RegionRunner {
 public:
  // ZeroOptions::units for `layers` over `model` (whose trainable parameters
  // they are: the model given to the ZeroOptimizer), in forward order. A
  // parameter several layers use, and each one `alone` names (a parameter
  // other pipeline stages hold too, which must be sharded alike on each),
  // is a unit of its own. Throws c10::ValueError naming a trainable
  // parameter of `model` that no layer uses (it would never be gathered).
  static std::vector<std::vector<std::string>> units_of(const models::LayerSequence& layers,
                                                        const torch::nn::Module& model,
                                                        const std::vector<std::string>& alone = {});

  // `zero` (stage 3, built with units_of(layers, model)) must outlive this.
  GatherRegions(ZeroOptimizer& zero, const models::LayerSequence& layers, const torch::nn::Module& model);

  bool takes(const std::string& name) override;
  torch::Tensor run(const std::string& name, Fn fn, const torch::Tensor& x,
                    std::vector<torch::Tensor> params) override;

 private:
  ZeroOptimizer& zero_;
  std::map<std::string, std::vector<size_t>> units_;  // layer name -> the units it uses
};

}  // namespace paisoar::zero
