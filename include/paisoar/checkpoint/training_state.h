// Training state <-> checkpoint: a module's parameters and buffers, an
// optimizer (see optimizer_state.h), the CPU random generator, and free-form
// metadata (step, epoch, loader position, loss scale, ...) as strings. What
// capture_training_state() produces is what CheckpointManager::save() takes.
#pragma once

#include "paisoar/format/tensor_file.h"
#include "paisoar/optim/optimizer_state.h"

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

namespace paisoar::checkpoint {

// Adds every parameter and buffer of `module` (recursively) as "model.<name>",
// e.g. "model.fc1.weight", "model.bn.running_mean".
void add_module_state(const torch::nn::Module& module, format::TensorMap& tensors);

// Copies the checkpoint's "model.*" tensors into `module`'s parameters and
// buffers. Every name, shape and dtype must match; otherwise throws c10::Error
// naming the file and listing each missing, unexpected and mismatched tensor,
// and `module` is left unchanged.
void restore_module_state(torch::nn::Module& module, const format::TensorFile& checkpoint);

// The default CPU generator's state as the U8 tensor "rng.cpu", and back.
// Restoring makes later torch::rand/dropout/... draw the same numbers.
void add_rng_state(format::TensorMap& tensors);
void restore_rng_state(const format::TensorFile& checkpoint);  // throws c10::Error if "rng.cpu" is absent

// What to capture or restore; null members are skipped. Not owning.
struct TrainingState {
  torch::nn::Module* model = nullptr;
  torch::optim::Optimizer* optimizer = nullptr;
  bool cpu_rng = true;
};

// With both a model and an optimizer, the metadata names the parameter of
// each optimizer index, as a JSON list ("" for one the model does not hold),
// so the optimizer state can be resharded by name (zero::ShardSet).
inline constexpr const char* kOptimizerNamesKey = "optim.param_names";

// model + optimizer + RNG, plus `metadata` (caller's keys must not start with
// "optim." or "paisoar.").
format::TensorFile capture_training_state(const TrainingState& state, format::Metadata metadata = {});
// Restores the parts named by `state`; the caller reads its own metadata back.
void restore_training_state(const TrainingState& state, const format::TensorFile& checkpoint);

}  // namespace paisoar::checkpoint
