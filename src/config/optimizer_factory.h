// The optimizer a TrainConfig names, over the given parameters and lr.
#pragma once

#include <torch/optim/optimizer.h>

#include <memory>
#include <vector>

#include "paisoar/train/train_config.h"

namespace paisoar::train {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& config,
                                                        const std::vector<torch::Tensor>& params,
                                                        double lr);

}  // namespace paisoar::train
