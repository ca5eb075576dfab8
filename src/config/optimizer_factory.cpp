// make_optimizer: sgd and adamw from torch::optim, lars and lamb from paisoar.
#include "src/config/optimizer_factory.h"

#include <torch/optim.h>

#include "paisoar/optim/lamb.h"
#include "paisoar/optim/lars.h"

namespace paisoar::train {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& c,
                                                        const std::vector<torch::Tensor>& params,
                                                        double lr) {
  if (c.name == "sgd") {
    return std::make_unique<torch::optim::SGD>(
        params, torch::optim::SGDOptions(lr).momentum(c.momentum).weight_decay(c.weight_decay));
  }
  if (c.name == "adamw") {
    return std::make_unique<torch::optim::AdamW>(
        params, torch::optim::AdamWOptions(lr).weight_decay(c.weight_decay));
  }
  if (c.name == "lars") {
    return std::make_unique<optim::LARS>(
        params, optim::LARSOptions(lr).momentum(c.momentum).weight_decay(c.weight_decay));
  }
  if (c.name == "lamb") {
    return std::make_unique<optim::LAMB>(params, optim::LAMBOptions(lr).weight_decay(c.weight_decay));
  }
  throw ConfigError("optimizer.name: '" + c.name + "' is not one of: sgd, adamw, lars, lamb");
}

}  // namespace paisoar::train
