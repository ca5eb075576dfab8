// What the Trainer saves in a checkpoint and restores from one: the model,
// the optimizer, the CPU RNG, the LR schedule, the loss scaler, the step and
// the loader's position, so a resumed run continues exactly where it stopped.
// Under ZeRO the model and optimizer are sharded: every rank first writes its
// shard to <dir>/zero-<12-digit step>/, then rank 0 writes the step file
// (which names that directory); the step file is the commit, so a kill in
// between leaves the previous checkpoint the newest. Model-parallel runs
// write one part per stage and tensor shard to <dir>/parts-<step>/ the same way.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "paisoar/amp/grad_scaler.h"
#include "paisoar/checkpoint/checkpoint_manager.h"
#include "paisoar/data/data_loader.h"
#include "paisoar/optim/lr_schedule.h"
#include "paisoar/train/train_config.h"
#include "paisoar/zero/zero_optimizer.h"

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::train {

struct TrainerState {
  torch::nn::Module* model = nullptr;
  torch::optim::Optimizer* optimizer = nullptr;
  optim::LrSchedule* schedule = nullptr;
  amp::GradScaler* scaler = nullptr;
  zero::ZeroOptimizer* zero = nullptr;  // set under ZeRO: model and optimizer state are sharded
  // Model parallelism (pipeline stages, tensor shards): `model` is this
  // rank's part; each part is written to <dir>/parts-<step>/<part_name>/ by
  // rank 0 of `part_group` (its data-parallel replicas), or by all of them
  // as ZeRO shards. "" : the model is whole on every rank.
  std::string part_name;
  std::shared_ptr<comm::Communicator> part_group;
  std::shared_ptr<comm::Communicator> world;
  std::string part_layout;      // e.g. "pipeline 2 x tensor 2"; a resume must use the same
  std::string pipeline_bounds;  // the stages' first layers and the end, "0,2,3"; kept so a resume cuts alike
};

struct ResumePoint {
  int64_t step = 0;             // optimizer steps already taken
  data::LoaderPosition loader;  // the next micro-batch to read
  std::string path;             // the checkpoint it came from
};

// The manager for `options` on every rank. Collective: when rank 0 cannot
// create or write the directory, every rank throws (rank 0 naming it), so no
// rank is left waiting in a collective for one that has gone.
checkpoint::CheckpointManager open_checkpoints(const checkpoint::CheckpointOptions& options,
                                               const std::shared_ptr<comm::Communicator>& comm);

// save_trainer_state under checkpoint.on_error (stop or warn). Collective:
// every rank learns whether rank 0's write failed (disk full, directory gone).
// Returns true when the checkpoint was written; on a failure throws on every
// rank ("stop", rank 0's error naming the file) or has rank 0 warn on stderr
// and returns false ("warn"). The previous checkpoint stays intact either way.
bool save_checkpoint(checkpoint::CheckpointManager& manager, const std::shared_ptr<comm::Communicator>& comm,
                     OnCheckpointError on_error, const TrainerState& state, int64_t step,
                     const data::LoaderPosition& loader, const std::string& config_text);

// Every rank calls it at the same step. Only rank 0 writes the step file;
// under ZeRO every rank writes its shard first (collective), and rank 0
// removes the shard directories no kept step file names. With model
// parallelism (state.part_name) every part is written first, collective
// over state.world, and old parts directories are removed the same way.
void save_trainer_state(checkpoint::CheckpointManager& manager, const TrainerState& state,
                        int64_t step, const data::LoaderPosition& loader, const std::string& config_text);

// Collective. The newest intact checkpoint restored into `state`, or nullopt
// if there is none. Every rank must find the same step (else every rank
// throws, naming the steps found). Throws (naming the file and the tensors)
// when it does not fit the model, when a ZeRO run meets a whole-model
// checkpoint or the other way round, or when shard files are missing.
// The pipeline split ("0,2,3") of the newest checkpoint in `manager`, if it
// is a model-parallel one; a resume builds its stages from it instead of
// profiling again (a new profile could cut elsewhere).
std::optional<std::vector<int>> checkpointed_pipeline_bounds(const checkpoint::CheckpointManager& manager);

std::optional<ResumePoint> restore_trainer_state(const checkpoint::CheckpointManager& manager,
                                                 const TrainerState& state,
                                                 const std::shared_ptr<comm::Communicator>& comm);

}  // namespace paisoar::train
