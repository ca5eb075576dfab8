// Each rank's peak memory, predicted before the first step (issue 38, part
// 4): the parameters and buffers this rank holds, the gradients and the
// optimizer state training will hold (by ZeRO stage and optimizer), and one
// micro-batch's forward and backward measured on the real model (the most it
// allocates above its start: activations, and gradients as backward makes
// them), with no gradient accumulated, no collective, the buffers and the
// random generator put back (ProbeGuard), and what one optimizer step
// allocates, measured on a copy of the largest parameter. When the total is over the budget, the changes
// that fit (ZeRO stages, activation checkpointing of every region, a smaller
// micro-batch with more accumulation) are predicted the same way and named.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "paisoar/data/dataset.h"
#include "paisoar/layout/placements.h"

#include "paisoar/train/train_config.h"
#include "paisoar/train/trainer.h"
#include "src/config/precision_context.h"

namespace paisoar::train {

struct MemoryPrediction {
  int64_t parameters = 0;       // parameters and buffers, as held now
  int64_t gradients = 0;        // after a step (ZeRO 2: this rank's shard)
  int64_t optimizer_state = 0;  // after a step (ZeRO 1-2: this rank's shard)
  // The most a step allocates above all that: one micro-batch's forward and
  // backward, or the optimizer's temporaries (both measured).
  int64_t step = 0;
  int64_t total() const { return parameters + gradients + optimizer_state + step; }
};

// What the prediction depends on besides the model.
struct MemoryLayout {
  std::string optimizer = "sgd";  // optimizer.name
  double momentum = 0.9;
  layout::Placements placements;  // what is sharded over how many ranks (a forward that is local)
  int64_t optimizer_step_bytes = 0;  // measure_optimizer_step_bytes
};

// "12.3": bytes in MiB with one decimal, as the memory messages print them.
std::string mib_text(int64_t bytes);

// The optimizer's state per trainable parameter, in parameter-sized tensors
// (sgd: its momentum buffer, none without momentum; adamw and lamb: two moments).
double state_per_parameter(const std::string& optimizer, double momentum);

// Bytes of one forward (under `precision`, `recompute` as the region runner
// when not null) and backward of (data, labels) through `model` above what
// was allocated at its start; -1 when the device's allocations are not
// counted (CPU without the tracking allocator).
int64_t measure_step_bytes(torch::nn::Module& model, const ForwardFn& forward, const LossFn& loss,
                           const torch::Tensor& data, const torch::Tensor& labels, const Precision& precision,
                           amp::RegionRunner* recompute, c10::Device device);

// The first `n` samples of `data` stacked as one micro-batch on `device`
// (data, labels), as the loader would give them without augmentation.
std::pair<torch::Tensor, torch::Tensor> first_samples(const data::Dataset& data, int64_t n, c10::Device device);

// What one optimizer step allocates above its start for the largest
// trainable parameter (the optimizers update one parameter at a time):
// `config`'s optimizer built over a copy of it with a gradient, stepped once
// to make its state, then measured; -1 when allocations are not counted.
int64_t measure_optimizer_step_bytes(const torch::nn::Module& model, const OptimizerConfig& config,
                                     c10::Device device);

// The prediction for `model` under `layout`, given a measured `step_bytes`.
MemoryPrediction predict_memory(const torch::nn::Module& model, const MemoryLayout& layout, int64_t step_bytes);

// "123.4 MiB (parameters 1.2, gradients 1.2, optimizer state 2.4, a step of
// micro-batch 64 above them 118.6)".
std::string describe_prediction(const MemoryPrediction& p, int64_t micro_batch);

// One change to the config and what it predicts.
struct MemoryFix {
  std::string change;  // "zero.stage: 1", "train.grad_accumulation: 4", ...
  MemoryPrediction predicted;
  int64_t micro_batch = 0;
};

// The budget per rank in bytes: memory.budget_mb, or for 0 what the device
// can still give (memory::available_bytes: on the CPU the machine's
// available memory over `ranks_per_node`, on a GPU its free memory) plus what
// this rank already holds (`held`); -1: none known.
int64_t memory_budget_bytes(const MemoryConfig& config, c10::Device device, int64_t ranks_per_node, int64_t held);

// The message of a run that does not fit: the prediction, the budget, and
// the fixes that fit (or that none does).
std::string over_budget_message(int64_t rank, const MemoryPrediction& predicted, int64_t micro_batch, int64_t budget,
                                const std::vector<MemoryFix>& fixes);

}  // namespace paisoar::train
