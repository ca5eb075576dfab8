// Trainer checkpoints: the checkpoint subsystem's model/optimizer/RNG state
// plus "schedule.*" and "scaler.*" tensors and "train.*" metadata.
#include "src/train/trainer_checkpoint.h"

#include <torch/torch.h>

#include <cstdio>
#include <stdexcept>

#include "paisoar/checkpoint/training_state.h"
#include "paisoar/comm/agreement.h"
#include "paisoar/comm/communicator.h"

namespace paisoar::train {
namespace {

void add_prefixed(checkpoint::TensorMap& out, const std::string& prefix,
                  const std::map<std::string, torch::Tensor>& state) {
  for (const auto& [key, value] : state) out[prefix + key] = value;
}

std::map<std::string, torch::Tensor> take_prefixed(const checkpoint::TensorMap& in, const std::string& prefix) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& [key, value] : in) {
    if (key.compare(0, prefix.size(), prefix) == 0) out[key.substr(prefix.size())] = value;
  }
  return out;
}

int64_t metadata_int(const checkpoint::Checkpoint& c, const std::string& key) {
  const auto it = c.metadata.find(key);
  if (it == c.metadata.end()) {
    throw std::runtime_error(c.source + " has no '" + key +
                             "': it was not written by paisoar's Trainer; point checkpoint.dir elsewhere");
  }
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(it->second, &used);
  } catch (const std::logic_error&) {  // invalid_argument, out_of_range
    used = 0;
  }
  if (used == 0 || used != it->second.size()) {
    throw std::runtime_error(c.source + ": metadata '" + key + "' is '" + it->second +
                             "', not an integer; the checkpoint is damaged, remove it to resume from the one before");
  }
  return value;
}

std::string message_of(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  return c10_error ? c10_error->what_without_backtrace() : e.what();
}

}  // namespace

checkpoint::CheckpointManager open_checkpoints(const checkpoint::CheckpointOptions& options,
                                               const std::shared_ptr<comm::Communicator>& comm) {
  std::string error;
  std::optional<checkpoint::CheckpointManager> manager;
  try {
    manager.emplace(options);
  } catch (const std::exception& e) {
    error = message_of(e);
  }
  if (comm::any_rank(comm, !error.empty())) {
    throw std::runtime_error(!error.empty() ? error + " (checkpoint.dir)"
                                            : "rank 0 cannot use checkpoint.dir '" + options.dir +
                                                  "'; its error says why");
  }
  return std::move(*manager);
}

bool save_checkpoint(checkpoint::CheckpointManager& manager, const std::shared_ptr<comm::Communicator>& comm,
                     const std::string& on_error, const TrainerState& state, int64_t step,
                     const data::LoaderPosition& loader, const std::string& config_text) {
  std::string error;
  try {
    save_trainer_state(manager, state, step, loader, config_text);
  } catch (const std::exception& e) {
    error = message_of(e);
  }
  if (!comm::any_rank(comm, !error.empty())) return true;
  const std::string what = "the checkpoint of step " + std::to_string(step) + " was not written";
  if (on_error == "warn") {
    if (!error.empty()) {
      std::fprintf(stderr, "warning: %s: %s; training goes on (checkpoint.on_error: warn), a restart would resume "
                           "from the previous checkpoint\n", what.c_str(), error.c_str());
      std::fflush(stderr);
    }
    return false;
  }
  throw std::runtime_error(what + (error.empty() ? " (rank 0 failed to write it; its error says why)" : ": " + error) +
                           "; free space or point checkpoint.dir elsewhere, then rerun to resume from the previous "
                           "checkpoint (or set checkpoint.on_error: warn to train on without it)");
}

void save_trainer_state(checkpoint::CheckpointManager& manager, const TrainerState& state,
                        int64_t step, const data::LoaderPosition& loader, const std::string& config_text) {
  checkpoint::Metadata metadata = {{"train.step", std::to_string(step)},
                                   {"train.loader_epoch", std::to_string(loader.epoch)},
                                   {"train.loader_batch", std::to_string(loader.batch)},
                                   {"train.config", config_text}};
  auto c = checkpoint::capture_training_state({state.model, state.optimizer, true}, std::move(metadata));
  add_prefixed(c.tensors, "schedule.", state.schedule->state_dict());
  add_prefixed(c.tensors, "scaler.", state.scaler->state_dict());
  manager.save(step, c);
}

std::optional<ResumePoint> restore_trainer_state(const checkpoint::CheckpointManager& manager,
                                                 const TrainerState& state) {
  auto loaded = manager.load_latest();
  if (!loaded) return std::nullopt;
  const auto& c = loaded->checkpoint;
  ResumePoint point;
  point.step = metadata_int(c, "train.step");
  point.loader = {metadata_int(c, "train.loader_epoch"), metadata_int(c, "train.loader_batch")};
  point.path = c.source;
  checkpoint::restore_training_state({state.model, state.optimizer, true}, c);
  state.schedule->load_state_dict(take_prefixed(c.tensors, "schedule."));
  state.scaler->load_state_dict(take_prefixed(c.tensors, "scaler."));
  return point;
}

}  // namespace paisoar::train
