// Trainer checkpoints, the save side: the step file holds the RNG,
// "schedule.*" and "scaler.*" tensors, "train.*" metadata, the file manifest
// and, for a whole model, the model and optimizer; otherwise those are in the
// directory that "train.zero_shards" (ZeRO) or "train.parts" (model
// parallelism) names. capture_save takes it at the step and save_checkpoint
// writes it (the same way whether at the step or in the background);
// trainer_resume.cpp reads it back.
#include "src/state/trainer_checkpoint.h"
#include "paisoar/error.h"

#include <c10/util/Exception.h>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <cstdio>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "paisoar/checkpoint/file_manifest.h"
#include "paisoar/format/safetensors.h"
#include "paisoar/checkpoint/training_state.h"
#include "paisoar/comm/agreement.h"
#include "paisoar/comm/communicator.h"
#include "paisoar/zero/sharded_checkpoint.h"
#include "src/state/state_entries.h"
#include "src/state/tensor_split_state.h"

namespace paisoar::train {
namespace {

std::string exact_text(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}


// Rank 0, after a save: removes the `kind` directories that no kept step file names.
void prune_step_dirs(const checkpoint::CheckpointManager& manager, const std::string& kind) {
  std::set<std::string> kept;
  for (const auto& f : manager.list()) kept.insert(step_dir_name(kind, f.step));
  const std::regex pattern(kind + R"(-\d{12})");
  const std::string& root = manager.options().dir;
  for (const auto& name : manager.file_system().list(root)) {
    if (!std::regex_match(name, pattern) || kept.count(name)) continue;
    try {
      manager.file_system().remove_all(root + "/" + name);
    } catch (const c10::Error& e) {
      std::fprintf(stderr, "warning: could not delete an old checkpoint's files: %s\n", e.what_without_backtrace());
    }
  }
}


}  // namespace


checkpoint::CheckpointManager open_checkpoints(const checkpoint::CheckpointOptions& options,
                                               const std::shared_ptr<comm::Communicator>& comm) {
  std::string error;
  std::optional<checkpoint::CheckpointManager> manager;
  try {
    manager.emplace(options);
  } catch (const std::exception& e) {
    error = error_text(e);
  }
  if (comm::any_rank(comm, !error.empty())) {
    C10_THROW_ERROR(Error, !error.empty() ? error + " (checkpoint.dir, by default <run_dir>/checkpoints: set run_dir "
                                                    "or checkpoint.dir)"
                                            : "rank 0 cannot use checkpoint.dir '" + options.dir +
                                                  "'; its error says why");
  }
  return std::move(*manager);
}

SaveSnapshot capture_save(const TrainerState& state, int64_t step, const RunProgress& progress,
                          const BatchShape& batch, const std::string& config_text) {
  format::Metadata metadata = {
      {"train.step", std::to_string(step)},
      {"train.batch_size", std::to_string(batch.batch_size)},
      {"train.loader_epoch", std::to_string(progress.loader.epoch)},
      {"train.loader_samples", std::to_string(progress.loader.batch * batch.micro_batch_samples)},
      {"train.loader_batch", std::to_string(progress.loader.batch)},  // in the writer's micro-batches, for people
      {"train.epoch_loss_sum", exact_text(progress.epoch_loss_sum)},
      {"train.epoch_steps", std::to_string(progress.epoch_steps)},
      {"train.world", std::to_string(state.world->size())},
      {"train.zero_stage", std::to_string(state.zero ? state.zero->stage() : 0)},
      {"train.config", config_text}};
  SaveSnapshot snapshot;
  snapshot.step = step;
  // The RNG goes in as a state entry, below.
  checkpoint::TrainingState in_step_file{state.model, state.optimizer, false};
  const ModelStateLayout layout = ModelStateLayout::of_run(state.cut, state.zero != nullptr, step);
  layout.write(metadata);
  if (layout.form != ModelStateLayout::Form::InStepFile) {
    using Form = ModelStateLayout::Form;
    snapshot.model_dir = layout.dir;
    const std::string dir = layout.dir + (layout.form == Form::Parts ? "/" + state.cut.part.name() : "");
    in_step_file = {nullptr, nullptr, false};
    // A part's files say which of its parameters are tensor-parallel shards.
    format::Metadata part_metadata = layout.form == Form::Parts ? split_metadata(*state.model) : format::Metadata{};
    part_metadata["train.step"] = std::to_string(step);
    if (state.zero) {
      auto shard = zero::capture_shard(*state.zero, part_metadata);  // collective
      snapshot.model_file = dir + "/" + shard.name;
      snapshot.model_state = std::move(shard.content);
    } else if (state.part_group->rank() == 0) {
      snapshot.model_file = dir + "/" + kPartFile;
      snapshot.model_state =
          checkpoint::capture_training_state({state.model, state.optimizer, false}, std::move(part_metadata));
    }
  }
  snapshot.step_file = checkpoint::capture_training_state(in_step_file, std::move(metadata));
  for (const StateEntry& entry : state_entries(state)) entry.save(snapshot.step_file.tensors);
  return snapshot;
}

void own_tensors(SaveSnapshot& snapshot) {
  for (auto* file : {&snapshot.step_file, &snapshot.model_state}) {
    for (auto& [name, t] : file->tensors) {
      torch::Tensor copy = torch::empty(t.sizes(), t.options().device(torch::kCPU).pinned_memory(t.is_cuda()));
      copy.copy_(t.detach());
      t = copy;
    }
  }
}

namespace {

// write_save's work: every rank's file, the agreement, then rank 0's commit.
void write_save(checkpoint::CheckpointManager& manager, const std::shared_ptr<comm::Communicator>& comm,
                const SaveSnapshot& snapshot) {
  const std::string& root = manager.options().dir;
  format::FileSystem& files_on = manager.file_system();
  format::TensorFile step_file = snapshot.step_file;
  std::vector<checkpoint::FileEntry> files;
  if (!snapshot.model_dir.empty()) {
    std::string error;
    if (comm->rank() == 0) {  // a leftover of an interrupted save of this step (maybe by another world size)
      try {
        files_on.remove_all(root + "/" + snapshot.model_dir);
      } catch (const std::exception& e) {
        error = error_text(e);
      }
    }
    comm->barrier().wait();
    if (error.empty() && !snapshot.model_file.empty()) {
      const std::string path = root + "/" + snapshot.model_file;
      try {
        files_on.create_directories(path.substr(0, path.rfind('/')));
        format::save_safetensors(files_on, path, snapshot.model_state.tensors, snapshot.model_state.metadata);
      } catch (const std::exception& e) {
        error = "cannot write " + path + ": " + error_text(e);
      }
    }
    if (comm::any_rank(comm, !error.empty())) {
      C10_THROW_ERROR(Error, !error.empty() ? error
                                            : "another rank could not write its part of the checkpoint of step " +
                                                  std::to_string(snapshot.step) + " (its error says why)");
    }
    if (comm->rank() == 0) files = checkpoint::describe_files(files_on, root, snapshot.model_dir);
  }
  step_file.metadata[checkpoint::kFilesKey] = checkpoint::file_manifest_json(files);
  manager.save(snapshot.step, step_file);
  if (comm->rank() == 0) {  // every kind: a run resumed on another layout leaves the other kind behind
    for (const auto& kind : ModelStateLayout::dir_kinds()) prune_step_dirs(manager, kind);
  }
}

}  // namespace

bool save_checkpoint(checkpoint::CheckpointManager& manager, const std::shared_ptr<comm::Communicator>& comm,
                     OnCheckpointError on_error, const SaveSnapshot& snapshot) {
  std::string error;
  try {
    write_save(manager, comm, snapshot);
  } catch (const std::exception& e) {
    error = error_text(e);
  }
  if (!comm::any_rank(comm, !error.empty())) return true;
  const std::string what = "the checkpoint of step " + std::to_string(snapshot.step) + " was not written";
  if (on_error == OnCheckpointError::Warn) {
    if (!error.empty()) {
      std::fprintf(stderr, "warning: %s: %s; training goes on (checkpoint.on_error: warn), a restart would resume "
                           "from the previous checkpoint\n", what.c_str(), error.c_str());
      std::fflush(stderr);
    }
    return false;
  }
  C10_THROW_ERROR(Error, what + (error.empty() ? " (rank 0 failed to write it; its error says why)" : ": " + error) +
                           "; free space or point checkpoint.dir elsewhere, then rerun to resume from the previous "
                           "checkpoint (or set checkpoint.on_error: warn to train on without it)");
}

}  // namespace paisoar::train
