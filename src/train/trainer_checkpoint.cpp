// Trainer checkpoints: the checkpoint subsystem's model/optimizer/RNG state
// (under ZeRO: the RNG only, the rest in the shard directory that
// "train.zero_shards" names; under model parallelism in the parts directory
// "train.parts" names) plus "schedule.*" and "scaler.*" tensors and
// "train.*" metadata.
#include "src/train/trainer_checkpoint.h"
#include "paisoar/error.h"

#include <c10/util/Exception.h>

#include <torch/torch.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "paisoar/format/safetensors.h"
#include "paisoar/checkpoint/training_state.h"
#include "paisoar/comm/agreement.h"
#include "paisoar/comm/communicator.h"
#include "paisoar/zero/sharded_checkpoint.h"

namespace paisoar::train {
namespace {

void add_prefixed(format::TensorMap& out, const std::string& prefix,
                  const std::map<std::string, torch::Tensor>& state) {
  for (const auto& [key, value] : state) out[prefix + key] = value;
}

std::map<std::string, torch::Tensor> take_prefixed(const format::TensorMap& in, const std::string& prefix) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& [key, value] : in) {
    if (key.compare(0, prefix.size(), prefix) == 0) out[key.substr(prefix.size())] = value;
  }
  return out;
}

int64_t metadata_int(const format::TensorFile& c, const std::string& key) {
  const auto it = c.metadata.find(key);
  if (it == c.metadata.end()) {
    C10_THROW_ERROR(Error, c.source + " has no '" + key +
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
    C10_THROW_ERROR(Error, c.source + ": metadata '" + key + "' is '" + it->second +
                             "', not an integer; the checkpoint is damaged, remove it to resume from the one before");
  }
  return value;
}

const char* const kShardKey = "train.zero_shards";
const char* const kPartsKey = "train.parts";
const char* const kPartLayoutKey = "train.part_layout";
const char* const kBoundsKey = "train.pipeline_bounds";
const char* const kPartFile = "part.safetensors";

// The directory of step `step`'s shards ("zero") or parts ("parts"), relative to checkpoint.dir.
std::string step_dir_name(const std::string& kind, int64_t step) {
  char name[40];
  std::snprintf(name, sizeof(name), "%s-%012lld", kind.c_str(), static_cast<long long>(step));
  return name;
}

// Rank 0, after a save: removes the `kind` directories that no kept step file names.
void prune_step_dirs(const checkpoint::CheckpointManager& manager, const std::string& kind) {
  namespace fs = std::filesystem;
  std::set<std::string> kept;
  for (const auto& f : manager.list()) kept.insert(step_dir_name(kind, f.step));
  const std::regex pattern(kind + R"(-\d{12})");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(manager.options().dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, pattern) && !kept.count(name)) fs::remove_all(entry.path(), ec);
  }
}

// Collective over the world: every part written to <dir>/parts-<step>/<part_name>/
// (by rank 0 of each part group, or by all of it as ZeRO shards), and every
// rank knows it before the step file (the commit) is written. Returns the
// directory's name.
std::string save_part(const checkpoint::CheckpointManager& manager, const TrainerState& state, int64_t step) {
  const std::string name = step_dir_name("parts", step);
  const std::string dir = manager.options().dir + "/" + name + "/" + state.part_name;
  if (state.world->rank() == 0) {
    std::error_code ec;  // a leftover of an interrupted save of this step
    std::filesystem::remove_all(manager.options().dir + "/" + name, ec);
  }
  state.world->barrier().wait();
  std::string error;
  try {
    if (state.zero) {
      zero::save_sharded(*state.zero, dir, {{"train.step", std::to_string(step)}});  // collective over the part group
    } else if (state.part_group->rank() == 0) {
      std::filesystem::create_directories(dir);
      const auto c = checkpoint::capture_training_state({state.model, state.optimizer, false});
      format::save_safetensors(dir + "/" + kPartFile, c.tensors, c.metadata);
    }
  } catch (const std::exception& e) {
    error = "cannot write " + dir + ": " + error_text(e);
  }
  if (comm::any_rank(state.world, !error.empty())) {
    C10_THROW_ERROR(Error, !error.empty() ? error : "another rank could not write its part of the checkpoint of step " +
                                                          std::to_string(step) + " (its error says why)");
  }
  return name;
}

// Puts this rank's part back from the parts directory `name` of checkpoint `c`.
void restore_part(const checkpoint::CheckpointManager& manager, const TrainerState& state,
                  const format::TensorFile& c, const std::string& name) {
  const auto layout = c.metadata.find(kPartLayoutKey);
  const std::string written = layout == c.metadata.end() ? "?" : layout->second;
  if (written != state.part_layout) {
    C10_THROW_ERROR(Error, c.source + " was written by a model split as " + written + "; this run splits it as " +
                             state.part_layout + ". Resume with the parallel: settings it was written with, or "
                             "point checkpoint.dir elsewhere to start over");
  }
  if (!std::regex_match(name, std::regex(R"(parts-\d{12})"))) {
    C10_THROW_ERROR(Error, c.source + ": metadata '" + kPartsKey + "' is '" + name +
                             "', not a parts directory name; the checkpoint is damaged, remove it to resume from "
                             "the one before");
  }
  const std::string dir = manager.options().dir + "/" + name + "/" + state.part_name;
  try {
    if (state.zero) {
      zero::load_sharded(*state.zero, dir);
    } else {
      checkpoint::restore_training_state({state.model, state.optimizer, false},
                                         format::load_safetensors(dir + "/" + kPartFile));
    }
  } catch (const std::exception& e) {
    C10_THROW_ERROR(Error, "cannot resume from " + c.source + " (this rank's part, " + dir + "): " + error_text(e));
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

bool save_checkpoint(checkpoint::CheckpointManager& manager, const std::shared_ptr<comm::Communicator>& comm,
                     OnCheckpointError on_error, const TrainerState& state, int64_t step,
                     const data::LoaderPosition& loader, const std::string& config_text) {
  std::string error;
  try {
    save_trainer_state(manager, state, step, loader, config_text);
  } catch (const std::exception& e) {
    error = error_text(e);
  }
  if (!comm::any_rank(comm, !error.empty())) return true;
  const std::string what = "the checkpoint of step " + std::to_string(step) + " was not written";
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

void save_trainer_state(checkpoint::CheckpointManager& manager, const TrainerState& state,
                        int64_t step, const data::LoaderPosition& loader, const std::string& config_text) {
  format::Metadata metadata = {{"train.step", std::to_string(step)},
                                   {"train.loader_epoch", std::to_string(loader.epoch)},
                                   {"train.loader_batch", std::to_string(loader.batch)},
                                   {"train.config", config_text}};
  checkpoint::TrainingState parts{state.model, state.optimizer, true};
  if (!state.part_name.empty()) {
    metadata[kPartsKey] = save_part(manager, state, step);
    metadata[kPartLayoutKey] = state.part_layout;
    if (!state.pipeline_bounds.empty()) metadata[kBoundsKey] = state.pipeline_bounds;
    parts = {nullptr, nullptr, true};
  } else if (state.zero) {
    const std::string name = step_dir_name("zero", step);
    const std::string dir = manager.options().dir + "/" + name;
    if (manager.options().rank == 0) {
      std::error_code ec;  // a leftover of an interrupted save of this step (maybe by another world size)
      std::filesystem::remove_all(dir, ec);
    }
    state.zero->comm()->barrier().wait();
    zero::save_sharded(*state.zero, dir, {{"train.step", std::to_string(step)}});
    metadata[kShardKey] = name;
    parts = {nullptr, nullptr, true};
  }
  auto c = checkpoint::capture_training_state(parts, std::move(metadata));
  add_prefixed(c.tensors, "schedule.", state.schedule->state_dict());
  add_prefixed(c.tensors, "scaler.", state.scaler->state_dict());
  manager.save(step, c);
  if (manager.options().rank == 0 && !state.part_name.empty()) prune_step_dirs(manager, "parts");
  if (manager.options().rank == 0 && state.zero && state.part_name.empty()) prune_step_dirs(manager, "zero");
}

std::optional<ResumePoint> restore_trainer_state(const checkpoint::CheckpointManager& manager,
                                                 const TrainerState& state,
                                                 const std::shared_ptr<comm::Communicator>& comm) {
  auto loaded = manager.load_latest();
  const int64_t step = loaded ? metadata_int(loaded->checkpoint, "train.step") : 0;
  if (loaded && step != loaded->step) {
    C10_THROW_ERROR(Error, loaded->checkpoint.source + ": its metadata says train.step " + std::to_string(step) +
                             " but its name says step " + std::to_string(loaded->step) +
                             ": it was renamed or damaged; remove it to resume from the one before");
  }
  // Every rank must resume from the same step (a node without the checkpoint
  // directory would start over and the ranks' collectives would not pair up).
  auto steps = torch::tensor({static_cast<double>(step), -static_cast<double>(step)}, torch::kDouble);
  comm->allreduce(steps, comm::ReduceOp::Max).wait();
  if (steps[0].item<double>() != -steps[1].item<double>()) {
    C10_THROW_ERROR(Error, "ranks resume from different steps (" + std::to_string(-steps[1].item<int64_t>()) +
                             " to " + std::to_string(steps[0].item<int64_t>()) + "); rank " +
                             std::to_string(comm->rank()) + " is at " + std::to_string(step) +
                             ": give every node the same checkpoint.dir (a shared file system)");
  }
  if (!loaded) return std::nullopt;
  const auto& c = loaded->checkpoint;
  ResumePoint point;
  point.step = step;
  point.loader = {metadata_int(c, "train.loader_epoch"), metadata_int(c, "train.loader_batch")};
  point.path = c.source;
  const auto parts = c.metadata.find(kPartsKey);
  const bool parted = parts != c.metadata.end();
  if (parted != !state.part_name.empty()) {
    C10_THROW_ERROR(Error, c.source + (parted ? " holds a model split by pipeline/tensor parallelism (" +
                                                      (c.metadata.count(kPartLayoutKey) ? c.metadata.at(kPartLayoutKey)
                                                                                        : std::string("?")) +
                                                      "); resume it with the same parallel: settings"
                                                : " holds a whole model; resume it without parallel.pipeline/tensor") +
                             ", or point checkpoint.dir elsewhere to start over");
  }
  if (parted) {
    restore_part(manager, state, c, parts->second);
    checkpoint::restore_training_state({nullptr, nullptr, true}, c);
    state.schedule->load_state_dict(take_prefixed(c.tensors, "schedule."));
    state.scaler->load_state_dict(take_prefixed(c.tensors, "scaler."));
    return point;
  }
  const auto shards = c.metadata.find(kShardKey);
  const bool sharded = shards != c.metadata.end();
  if (sharded && !state.zero) {
    C10_THROW_ERROR(Error, c.source + " is a ZeRO checkpoint (model and optimizer sharded in " +
                             manager.options().dir + "/" + shards->second +
                             "); resume it with zero.stage 1, 2 or 3 (any number of ranks), or point "
                             "checkpoint.dir elsewhere to start over");
  }
  if (!sharded && state.zero) {
    C10_THROW_ERROR(Error, c.source + " holds the whole model and optimizer (written with zero.stage 0); "
                             "resume it with zero.stage: 0, or point checkpoint.dir elsewhere to start over");
  }
  if (sharded) {
    if (!std::regex_match(shards->second, std::regex(R"(zero-\d{12})"))) {
      C10_THROW_ERROR(Error, c.source + ": metadata '" + kShardKey + "' is '" + shards->second +
                               "', not a shard directory name; the checkpoint is damaged, remove it to resume "
                               "from the one before");
    }
    try {
      zero::load_sharded(*state.zero, manager.options().dir + "/" + shards->second);
    } catch (const std::exception& e) {
      C10_THROW_ERROR(Error, "cannot resume from " + c.source + ": " + error_text(e));
    }
  }
  checkpoint::restore_training_state({sharded ? nullptr : state.model, sharded ? nullptr : state.optimizer, true},
                                     c);
  state.schedule->load_state_dict(take_prefixed(c.tensors, "schedule."));
  state.scaler->load_state_dict(take_prefixed(c.tensors, "scaler."));
  return point;
}

std::optional<std::vector<int>> checkpointed_pipeline_bounds(const checkpoint::CheckpointManager& manager) {
  const auto loaded = manager.load_latest();
  if (!loaded) return std::nullopt;
  const auto it = loaded->checkpoint.metadata.find(kBoundsKey);
  if (it == loaded->checkpoint.metadata.end()) return std::nullopt;
  std::vector<int> bounds;
  std::stringstream text(it->second);
  std::string item;
  while (std::getline(text, item, ',')) {
    try {
      bounds.push_back(std::stoi(item));
    } catch (const std::logic_error&) {
      C10_THROW_ERROR(Error, loaded->checkpoint.source + ": metadata '" + kBoundsKey + "' is '" + it->second +
                               "', not a list of layer indices; the checkpoint is damaged, remove it to resume from "
                               "the one before");
    }
  }
  return bounds;
}

}  // namespace paisoar::train
