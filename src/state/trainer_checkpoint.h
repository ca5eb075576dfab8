// What the Trainer saves in a checkpoint and restores from one: the model,
// the optimizer, the CPU RNG, the LR schedule, the loss scaler, the step, the
// loader's position (in samples) and the epoch's running loss, so a resumed
// run continues exactly where it stopped, its logged curves included.
// Where the model and optimizer go depends on the run's layout; one save path
// (capture_save, save_checkpoint: trainer_checkpoint.cpp) and one resume path
// (newest_checkpoint, restore_trainer_state: trainer_resume.cpp) handle every
// layout:
//   whole on every rank (zero.stage 0)  in the step file itself;
//   ZeRO shards                         <dir>/zero-<12-digit step>/, one file per rank;
//   model-parallel parts                <dir>/parts-<step>/p<stage>-t<shard>/, each
//                                       part whole or as ZeRO shards.
// Every rank writes its files first; rank 0 then writes the step file, whose
// metadata lists each of them with its size and CRC-32 ("checkpoint.files",
// checkpoint/file_manifest.h). The step file is the commit: a kill in
// between leaves the previous checkpoint the newest, and a resume takes a
// checkpoint only when its files are exactly the listed ones.
// A resume reshards through zero::detail::ShardSet: a whole-model checkpoint
// resumes under ZeRO (any stage, any number of ranks) and a ZeRO one without
// it, and pipeline splits change (none included); tensor-parallel widths not.
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
#include "paisoar/train/model_state_layout.h"
#include "paisoar/train/train_config.h"
#include "paisoar/zero/zero_optimizer.h"
#include "src/zero/shard_set.h"

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::train {

// A part's file when it is whole (not ZeRO shards).
inline constexpr const char* kPartFile = "part.safetensors";

struct TrainerState {
  torch::nn::Module* model = nullptr;
  torch::optim::Optimizer* optimizer = nullptr;
  optim::LrSchedule* schedule = nullptr;
  amp::GradScaler* scaler = nullptr;
  zero::ZeroOptimizer* zero = nullptr;  // set under ZeRO: model and optimizer state are sharded
  std::shared_ptr<comm::Communicator> world;
  // The ranks that hold the same model (part): its data-parallel replicas,
  // the world without model parallelism. Its rank 0 writes the model state
  // unless it is sharded by ZeRO over all of them.
  std::shared_ptr<comm::Communicator> part_group;
  // This run's config (dump_config): a resume compares the checkpoint's
  // with it and names what changed.
  std::string config_text;
  // How the run cuts the model (ModelStateLayout): split, `model` is this
  // rank's part, written to <dir>/parts-<step>/<cut.part.name()>/; a
  // checkpoint of another cut is resharded on resume.
  ModelCut cut;
  // All the layers (this rank's tensor shards of them), of which `model` is
  // this rank's stage (split cuts only).
  torch::nn::Module* whole_model = nullptr;
};

// How far the run has come, beyond the step: saved with each checkpoint.
struct RunProgress {
  data::LoaderPosition loader;      // the next micro-batch to read (this run's micro-batches)
  double epoch_loss_sum = 0;        // the epoch's running loss (EpochTally), so its logged mean continues
  int64_t epoch_steps = 0;
};

// What a resume must agree with: the run's batch, as the plan has it.
struct BatchShape {
  int64_t batch_size = 0;           // train.batch_size: samples per optimizer step, over all ranks
  int64_t micro_batch_samples = 0;  // samples of one micro-batch over all data-parallel ranks
  int64_t steps_per_epoch = 0;
};

struct ResumePoint {
  int64_t step = 0;             // optimizer steps already taken
  data::LoaderPosition loader;  // the next micro-batch to read, in this run's micro-batches
  double epoch_loss_sum = 0;    // the running loss of the epoch resumed, up to `step`
  int64_t epoch_steps = 0;
  std::string path;             // the checkpoint it came from
};

// The manager for `options` on every rank. Collective: when rank 0 cannot
// create or write the directory, every rank throws (rank 0 naming it), so no
// rank is left waiting in a collective for one that has gone.
checkpoint::CheckpointManager open_checkpoints(const checkpoint::CheckpointOptions& options,
                                               const std::shared_ptr<comm::Communicator>& comm);

// What one save writes, captured at its step (capture_save): the step file
// and this rank's file of model state. Its tensors share storage with the
// model and optimizer until own_tensors() copies them.
struct SaveSnapshot {
  int64_t step = 0;
  format::TensorFile step_file;    // written by rank 0, last, with the manifest added
  std::string model_dir;           // "zero-<step>", "parts-<step>"; "": the model is in the step file
  std::string model_file;          // this rank's, relative to checkpoint.dir; "": it writes none
  format::TensorFile model_state;  // model_file's content
};

// Every rank calls it at the same step; collective under ZeRO (the shard
// files' run id is broadcast). Touches no file.
SaveSnapshot capture_save(const TrainerState& state, int64_t step, const RunProgress& progress,
                          const BatchShape& batch, const std::string& config_text);

// Replaces every tensor of `snapshot` by a host copy of its own (pinned when
// it came from a GPU), so training can go on while it is written.
void own_tensors(SaveSnapshot& snapshot);

// Writes `snapshot` under checkpoint.on_error (stop or warn). Collective over
// `comm` (the world, or a group of the same ranks for a background writer):
// every rank writes its file, all agree they are in place, then rank 0
// writes the step file with the manifest (the commit) and prunes old
// checkpoints. Returns true when the checkpoint was written; on a failure
// throws on every rank ("stop", the failing rank's error naming the file) or
// has rank 0 warn on stderr and returns false ("warn"). The previous
// checkpoint stays intact either way.
bool save_checkpoint(checkpoint::CheckpointManager& manager, const std::shared_ptr<comm::Communicator>& comm,
                     OnCheckpointError on_error, const SaveSnapshot& snapshot);

// What is wrong with the Trainer checkpoint `loaded` (a step file that read
// intact) in checkpoint.dir `root` on `fs`: no CRC-32s, a train.step other than its
// name's, a damaged manifest, listed files missing or of another size (with
// `checksums`, of other contents: every listed file is read), files present
// but not listed. Empty: it can be resumed. Not collective.
std::vector<std::string> checkpoint_problems(format::FileSystem& fs, const checkpoint::CheckpointManager::Loaded& loaded,
                                             const std::string& root, bool checksums);

// The checkpoint a resume starts from, read in full and checked: its step
// file and the model state it names.
struct ResumeSource {
  checkpoint::CheckpointManager::Loaded step_file;
  std::optional<zero::detail::ShardSet> shards;  // ZeRO shards (written by any number of ranks), or
  std::optional<format::TensorFile> part_file;   // this rank's part, whole; neither: the model is in the step file
  // The model state is the whole model's (written without model parallelism
  // or with another pipeline split): a run with one cuts its part from it.
  bool whole_model = false;
};

// The newest checkpoint the Trainer can resume from: its step file loads
// intact and has no checkpoint_problems (sizes checked, not contents), and
// the model state its ModelStateLayout names (the ZeRO shards, or this
// rank's part of `cut`; all parts when it was written with another cut)
// loads intact, every file's own CRC-32s checked. A newer one that does not is named in a warning and
// skipped. nullopt: the directory holds none. Collective over `comm` (null:
// not, for a tool): the ranks try the same checkpoints in the same order and
// take one only when every rank could, so each rank reading just its part
// cannot make them diverge; ranks that see different checkpoints all throw.
std::optional<ResumeSource> newest_checkpoint(const checkpoint::CheckpointManager& manager, const ModelCut& cut,
                                              const std::shared_ptr<comm::Communicator>& comm);

// The pipeline split ("0,2,3") of `newest`, if it is a model-parallel one; a
// resume builds its stages from it instead of profiling again (a new profile
// could cut elsewhere).
std::optional<std::vector<int>> checkpointed_pipeline_bounds(const std::optional<ResumeSource>& newest);

// Collective. `newest` (newest_checkpoint's) restored into `state`, or
// nullopt if there is none. Every rank must find the same step (else every
// rank throws, naming the steps found). Reshards between whole-model and ZeRO
// layouts, over any number of ranks. Throws (naming the file and the key or
// tensors) when it does not fit the model, was written with another
// train.batch_size or another model-parallel split, or its loader position is
// not a whole number of this run's micro-batches or not where its step is in
// this run's epochs (the data set changed).
std::optional<ResumePoint> restore_trainer_state(const std::optional<ResumeSource>& newest,
                                                 const TrainerState& state, const BatchShape& batch,
                                                 const std::shared_ptr<comm::Communicator>& comm);



}  // namespace paisoar::train
