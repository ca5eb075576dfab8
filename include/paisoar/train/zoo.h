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
// ConfigError for an unknown name, a model the data does not fit, or a
// layout the model cannot take, and data::DataError for missing data. The
// model is one module tree whatever the layout, with its layers in
// TrainTask::layers; parallel.tensor > 1 (mlp, fashion_cnn, fashion_cnn_bn,
// gpt) builds its tensor-parallel variant (the same parameter names, this
// rank's shards) over `tensor_group`: pass Trainer::tensor_group()
// (c10::ValueError without it). gpt trains on data.format text.
TrainTask make_task(const TrainConfig& config,
                    const std::shared_ptr<comm::Communicator>& tensor_group = nullptr);

// Throws ConfigError when the reference model model.name cannot take the
// layout parallel.* gives: more pipeline stages than
// it has layers, or a tensor width that does not divide what its
// tensor-parallel layers split (heads, hidden widths, the vocabulary), or a
// model without tensor-parallel layers; the message names the key, the model
// and the nearest layout that works. make_task checks it too; `paisoar
// train` calls it before any rank starts.
void check_reference_layout(const TrainConfig& config);

// The same model over the caller's data sets instead of data.*'s (`eval` may
// be null); the model's input channels are those of train's sample 0.
TrainTask make_task(const TrainConfig& config, std::shared_ptr<const data::Dataset> train,
                    std::shared_ptr<const data::Dataset> eval,
                    const std::shared_ptr<comm::Communicator>& tensor_group = nullptr);

}  // namespace paisoar::train
