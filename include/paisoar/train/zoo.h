// The models and data sets a TrainConfig names (model.name, data.format), so
// `paisoar train --config` needs no code; a user's own program builds its
// TrainTask instead.
#pragma once

#include <memory>

#include "paisoar/train/trainer.h"

namespace paisoar::train {

// A TrainTask with the configured reference model and data sets. Seeds
// torch's generator with config.seed before building the model, so every rank
// starts from the same weights (DDP broadcasts rank 0's anyway). Throws
// ConfigError for an unknown name and data::DataError for missing data.
// parallel.tensor > 1 (mlp only) splits the model over `tensor_group`: pass
// Trainer::tensor_group() (c10::ValueError without it). parallel.pipeline
// > 1 sets TrainTask::layers (mlp, fashion_cnn, fashion_cnn_bn).
TrainTask make_task(const TrainConfig& config,
                    const std::shared_ptr<comm::Communicator>& tensor_group = nullptr);

// The same model over the caller's data sets instead of data.*'s (`eval` may
// be null); the model's input channels are those of train's sample 0.
TrainTask make_task(const TrainConfig& config, std::shared_ptr<const data::Dataset> train,
                    std::shared_ptr<const data::Dataset> eval,
                    const std::shared_ptr<comm::Communicator>& tensor_group = nullptr);

}  // namespace paisoar::train
