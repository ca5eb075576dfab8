// Trainer checkpoints, the resume side: which checkpoint every rank can use
// (newest_checkpoint, reading the model state in full first), what is wrong
// with one (checkpoint_problems, for verify too), and its state put back
// into whatever layout this run has (restore_trainer_state,
// read_model_state), resharding through zero::detail::ShardSet.
#include <c10/util/Exception.h>
#include <torch/torch.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "paisoar/checkpoint/file_manifest.h"
#include "paisoar/checkpoint/training_state.h"
#include "paisoar/comm/agreement.h"
#include "paisoar/comm/communicator.h"
#include "paisoar/error.h"
#include "paisoar/format/safetensors.h"
#include "paisoar/tensor_parallel/sharding.h"
#include "paisoar/zero/sharded_checkpoint.h"
#include "src/state/checkpoint_metadata.h"
#include "src/state/trainer_checkpoint.h"
#include "src/state/state_entries.h"
#include "src/state/tensor_split_state.h"

namespace paisoar::train {

using detail::metadata_double;
using detail::metadata_int;
using detail::metadata_text;

namespace {

// One part directory (<dir>/p<stage>-t<shard>/) as a ShardSet: its
// part.safetensors, or its ZeRO shards.
zero::detail::ShardSet read_part(format::FileSystem& fs, const std::string& part) {
  if (fs.status(part + "/" + kPartFile).kind != format::FileKind::Missing) {
    return zero::detail::shard_set_of_whole(format::load_safetensors(fs, part + "/" + kPartFile), {});
  }
  return zero::detail::read_shard_set(fs, part);
}

// The parts of a model-parallel checkpoint (`layout`'s, under checkpoint.dir
// `root`) as one model: each stage's tensor-parallel shards joined, the
// stages one after another. Throws c10::Error naming a part that is missing.
zero::detail::ShardSet whole_of_parts(format::FileSystem& fs, const std::string& root, const ModelStateLayout& layout) {
  const std::string dir = root + "/" + layout.dir;
  zero::detail::ShardSet whole;
  std::vector<zero::detail::ShardSet> shards;
  for (const PartId& part : layout.parts()) {
    const std::string path = dir + "/" + part.name();
    if (fs.status(path).kind != format::FileKind::Directory) {
      C10_THROW_ERROR(Error, dir + " lacks " + part.name() + "/ (stage " + std::to_string(part.stage) +
                               "'s tensor-parallel shard " + std::to_string(part.shard) + " of " + layout.describe() +
                               "); the checkpoint is incomplete");
    }
    shards.push_back(read_part(fs, path));
    if (part.shard + 1 == layout.cut.tensor) {
      zero::detail::append_part(whole, join_tensor_shards(std::move(shards)));
      shards.clear();
    }
  }
  return whole;
}

// Puts a checkpoint's model state (ZeRO shards, or one whole-model file)
// into this rank's model and optimizer, resharding between the two forms
// when the run's layout is the other one.
void read_model_state(const TrainerState& state, const zero::detail::ShardSet* shards,
                      const format::TensorFile* whole) {
  if (shards) {
    if (state.zero) {
      zero::detail::load_shard_set(*state.zero, *shards);
    } else {
      checkpoint::restore_training_state({state.model, state.optimizer, false},
                                         zero::detail::whole_of_shard_set(*shards, *state.model, *state.optimizer));
    }
  } else if (state.zero) {
    zero::load_whole(*state.zero, *whole);
  } else {
    checkpoint::restore_training_state({state.model, state.optimizer, false}, *whole);
  }
}

}  // namespace

std::vector<std::string> checkpoint_problems(format::FileSystem& fs, const checkpoint::CheckpointManager::Loaded& loaded,
                                             const std::string& root, bool checksums) {
  const auto& c = loaded.checkpoint;
  std::vector<std::string> problems;
  if (!c.metadata.count(format::kDataCrcKey) || !c.metadata.count(format::kHeaderCrcKey)) {
    problems.push_back(std::string("it has no CRC-32s ('") + format::kDataCrcKey + "', '" + format::kHeaderCrcKey +
                       "'): it was not written by paisoar's Trainer or they were removed, so it cannot be checked");
    return problems;
  }
  try {
    const int64_t step = metadata_int(c, "train.step", 0);
    if (step != loaded.step) {
      problems.push_back("its metadata says train.step " + std::to_string(step) + " but its name says step " +
                         std::to_string(loaded.step) + ": it was renamed or damaged");
    }
    const std::string dir = ModelStateLayout::of(c).dir;
    const auto files = checkpoint::parse_file_manifest(metadata_text(c, checkpoint::kFilesKey), c.source);
    if (dir.empty()) {
      for (const auto& f : files) problems.push_back("'" + f.path + "' is listed, but the checkpoint names no directory");
    } else {
      for (auto& p : checkpoint::check_files(fs, root, dir, files, checksums)) problems.push_back(std::move(p));
    }
  } catch (const c10::Error& e) {
    problems.push_back(e.what_without_backtrace());
  }
  return problems;
}

namespace {

// Refuses (c10::Error, so load_latest falls back to an older one) a step file
// that the Trainer cannot trust (checkpoint_problems, without reading the
// listed files' bytes: their own CRCs are checked as they load).
void check_resumable(format::FileSystem& fs, const checkpoint::CheckpointManager::Loaded& loaded,
                     const std::string& root) {
  const auto problems = checkpoint_problems(fs, loaded, root, false);
  if (problems.empty()) return;
  std::string list;
  for (const auto& p : problems) list += (list.empty() ? "" : "; ") + p;
  C10_THROW_ERROR(Error, loaded.checkpoint.source + ": " + list + "; it is incomplete or was changed");
}

}  // namespace

namespace {

// The checkpoint `file` as a resume would use it on this rank (see
// newest_checkpoint). Throws when it cannot.
ResumeSource read_source(format::FileSystem& fs, const checkpoint::CheckpointFile& file, const std::string& root,
                         const ModelCut& cut) {
  ResumeSource source;
  source.step_file = {file.step, format::load_safetensors(fs, file.path)};
  check_resumable(fs, source.step_file, root);
  const ModelStateLayout layout = ModelStateLayout::of(source.step_file.checkpoint);
  const bool own_part = layout.holds_part_of(cut);
  source.whole_model = cut.split() && !own_part;
  switch (layout.form) {
    case ModelStateLayout::Form::InStepFile:
      break;
    case ModelStateLayout::Form::Shards:
      source.shards = zero::detail::read_shard_set(fs, root + "/" + layout.dir);
      break;
    case ModelStateLayout::Form::Parts:
      if (!own_part) {
        source.shards = whole_of_parts(fs, root, layout);  // every part: the whole model
        break;
      }
      const std::string dir = root + "/" + layout.dir + "/" + cut.part.name();
      if (fs.status(dir + "/" + kPartFile).kind != format::FileKind::Missing) {
        source.part_file = format::load_safetensors(fs, dir + "/" + kPartFile);
      } else {
        source.shards = zero::detail::read_shard_set(fs, dir);
      }
      break;
  }
  return source;
}

}  // namespace

std::optional<ResumeSource> newest_checkpoint(const checkpoint::CheckpointManager& manager, const ModelCut& cut,
                                              const std::shared_ptr<comm::Communicator>& comm) {
  const std::string root = manager.options().dir;
  manager.warn_unusable_entries();
  std::vector<checkpoint::CheckpointFile> files = manager.list();
  std::reverse(files.begin(), files.end());  // newest first
  if (comm) {
    // The ranks try the same checkpoints in the same order, or none.
    const double n = static_cast<double>(files.size()), newest = files.empty() ? -1.0 : files[0].step;
    auto seen = torch::tensor({n, newest, -n, -newest}, torch::kDouble);
    comm->allreduce(seen, comm::ReduceOp::Max).wait();
    if (seen[0].item<double>() != -seen[2].item<double>() || seen[1].item<double>() != -seen[3].item<double>()) {
      C10_THROW_ERROR(Error, "the ranks see different checkpoints in checkpoint.dir '" + root + "' (rank " +
                               std::to_string(comm->rank()) + ": " + std::to_string(files.size()) +
                               ", the newest at step " + std::to_string(static_cast<int64_t>(newest)) +
                               "): give every node the same checkpoint.dir (a shared file system)");
    }
  }
  std::string newest_error;
  for (size_t i = 0; i < files.size(); ++i) {
    std::optional<ResumeSource> source;
    std::string error;
    try {
      source = read_source(manager.file_system(), files[i], root, cut);
    } catch (const std::exception& e) {
      error = error_text(e);
    }
    // A checkpoint is taken by every rank or by none (each reads its own part).
    if (!(comm ? comm::any_rank(comm, !error.empty()) : !error.empty())) return source;
    const std::string why = error.empty() ? "another rank cannot use it (its warning says why)" : error;
    if (newest_error.empty()) newest_error = why;
    if (!error.empty() || !comm || comm->rank() == 0) {
      std::cerr << "warning: skipping checkpoint '" << files[i].path << "': " << why
                << (i + 1 < files.size() ? "; falling back to '" + files[i + 1].path + "'" : std::string())
                << std::endl;
    }
  }
  if (!files.empty()) {
    C10_THROW_ERROR(Error, "none of the " + std::to_string(files.size()) + " checkpoints in '" + root +
                             "' can be used (the newest: " + newest_error +
                             "); remove them to start from scratch, or point checkpoint.dir elsewhere");
  }
  return std::nullopt;
}

namespace {

// Refuses (ConfigError, the same on every rank) a checkpoint made with a
// setting a resume cannot take, naming each changed one with both values,
// the file, and what a resume can take instead.
void check_settings(const format::TensorFile& c, const std::string& run_config) {
  const auto saved = c.metadata.find("train.config");
  if (saved == c.metadata.end() || run_config.empty()) return;
  std::string cannot, can;
  for (const ConfigChange& change : config_changes(saved->second, run_config)) {
    if (change.key == "run_dir" || change.key.rfind("checkpoint.", 0) == 0) continue;  // where it lives
    std::string& list = resume_takes_change(change.key) ? can : cannot;
    list += (list.empty() ? "" : "; ") + change.key + " " + change.was + " there, " + change.now + " now";
  }
  if (cannot.empty()) return;
  throw ConfigError(c.source + ": it was made with settings a resume cannot take: " + cannot +
                    " (they fix the sample order, the step count or the model). Set them back to resume from it, "
                    "or point checkpoint.dir elsewhere to start over. A resume takes other changes (the layout: "
                    "ranks, parallel.*, zero.stage; the optimizer and schedule; data.workers; logging)" +
                    (can.empty() ? std::string() : ", and these changed too: " + can));
}

}  // namespace

std::optional<ResumePoint> restore_trainer_state(const std::optional<ResumeSource>& newest,
                                                 const TrainerState& state, const BatchShape& batch,
                                                 const std::shared_ptr<comm::Communicator>& comm) {
  const int64_t step = newest ? newest->step_file.step : 0;  // check_resumable: train.step is the name's
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
  if (!newest) return std::nullopt;
  const auto& c = newest->step_file.checkpoint;
  check_settings(c, state.config_text);
  const int64_t saved_batch = metadata_int(c, "train.batch_size", 1);
  if (saved_batch != batch.batch_size) {
    C10_THROW_ERROR(Error, c.source + ": metadata 'train.batch_size' is " + std::to_string(saved_batch) +
                             ", this run's train.batch_size is " + std::to_string(batch.batch_size) +
                             ": a resume continues the sample order, the step count and the LR schedule only at the "
                             "batch size they were made with; set train.batch_size: " + std::to_string(saved_batch) +
                             " (any number of ranks or grad_accumulation), or point checkpoint.dir elsewhere to "
                             "start over");
  }
  const int64_t samples = metadata_int(c, "train.loader_samples", 0);
  if (samples % batch.micro_batch_samples != 0) {
    C10_THROW_ERROR(Error, c.source + ": metadata 'train.loader_samples' is " + std::to_string(samples) +
                             ", not a whole number of this run's micro-batches of " +
                             std::to_string(batch.micro_batch_samples) + " samples over all ranks; resume with the "
                             "train.grad_accumulation it was written with");
  }
  ResumePoint point;
  point.step = step;
  point.loader = {metadata_int(c, "train.loader_epoch", 0), samples / batch.micro_batch_samples};
  if (point.loader.epoch * batch.steps_per_epoch + samples / batch.batch_size != step) {
    C10_THROW_ERROR(Error, c.source + ": its loader position (metadata 'train.loader_epoch' " +
                             std::to_string(point.loader.epoch) + ", 'train.loader_samples' " +
                             std::to_string(samples) + ") is not where step " + std::to_string(step) +
                             " falls in this run's epochs of " + std::to_string(batch.steps_per_epoch) +
                             " steps: the training data (data.train_limit, data.path) is not the one it was written "
                             "with, or the file is damaged; resume with the same data, or point checkpoint.dir "
                             "elsewhere to start over");
  }
  point.epoch_loss_sum = metadata_double(c, "train.epoch_loss_sum");
  point.epoch_steps = metadata_int(c, "train.epoch_steps", 0);
  point.path = c.source;

  const zero::detail::ShardSet* shards = newest->shards ? &*newest->shards : nullptr;
  std::optional<zero::detail::ShardSet> part;  // this rank's part, cut from the whole model
  std::string error;
  try {
    if (newest->whole_model) {
      part = shards ? *shards : zero::detail::shard_set_of_whole(newest->part_file ? *newest->part_file : c, {});
      if (state.cut.tensor > 1) {  // the whole parameters, cut into this rank's tensor-parallel shards
        const auto splits = tensor_parallel::parameter_splits(*state.whole_model);
        cut_tensor_shard(*part, splits, state.cut.part.shard, state.cut.tensor);
      }
      zero::detail::keep_part(*part, zero::detail::names_of(*state.model));
      shards = &*part;
    }
    read_model_state(state, shards, newest->part_file ? &*newest->part_file : &c);
  } catch (const std::exception& e) {
    // Both layouts named: the checkpoint's and this run's.
    error = "cannot resume from " + c.source + " (its model and optimizer " + ModelStateLayout::of(c).describe() +
            "; this run: pipeline " + std::to_string(state.cut.pipeline) + " x tensor " +
            std::to_string(state.cut.tensor) + "): " + error_text(e);
  }
  // A part that does not fit fails on its stage's ranks only: every rank
  // stops here, none goes on to wait for it in the first step.
  if (comm::any_rank(comm, !error.empty())) {
    C10_THROW_ERROR(Error, !error.empty() ? error : "another rank cannot resume from " + c.source +
                                                        " (its error says why)");
  }
  for (const StateEntry& entry : state_entries(state)) entry.restore(c);
  return point;
}

std::optional<std::vector<int>> checkpointed_pipeline_bounds(const std::optional<ResumeSource>& newest) {
  if (!newest) return std::nullopt;
  const ModelStateLayout layout = ModelStateLayout::of(newest->step_file.checkpoint);
  if (layout.cut.bounds.empty()) return std::nullopt;
  return layout.cut.bounds;
}

}  // namespace paisoar::train
