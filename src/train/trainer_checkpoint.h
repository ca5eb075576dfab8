// What the Trainer saves in a checkpoint and restores from one: the model,
// the optimizer, the CPU RNG, the LR schedule, the loss scaler, the step and
// the loader's position, so a resumed run continues exactly where it stopped.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <optional>
#include <string>

#include "paisoar/amp/grad_scaler.h"
#include "paisoar/checkpoint/checkpoint_manager.h"
#include "paisoar/data/data_loader.h"
#include "paisoar/optim/lr_schedule.h"

namespace paisoar::train {

struct TrainerState {
  torch::nn::Module* model = nullptr;
  torch::optim::Optimizer* optimizer = nullptr;
  optim::LrSchedule* schedule = nullptr;
  amp::GradScaler* scaler = nullptr;
};

struct ResumePoint {
  int64_t step = 0;             // optimizer steps already taken
  data::LoaderPosition loader;  // the next micro-batch to read
  std::string path;             // the checkpoint it came from
};

// Collective in the sense that every rank calls it at the same step; only
// rank 0 writes (CheckpointManager).
void save_trainer_state(checkpoint::CheckpointManager& manager, const TrainerState& state,
                        int64_t step, const data::LoaderPosition& loader, const std::string& config_text);

// The newest intact checkpoint restored into `state`, or nullopt if there is
// none. Throws (naming the file and the tensors) when it does not fit the model.
std::optional<ResumePoint> restore_trainer_state(const checkpoint::CheckpointManager& manager,
                                                 const TrainerState& state);

}  // namespace paisoar::train
