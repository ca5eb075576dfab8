// What one layer costs a pipeline stage: its forward+backward time and the
// memory it holds. Given by the user, or measured on a sample batch by
// profile_layers, and the input of the partitioner (partition.h).
#pragma once

#include <torch/nn/modules/container/sequential.h>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "paisoar/models/layer_sequence.h"

namespace paisoar::pipeline {

struct LayerCost {
  std::string name;         // for the printed plan only; may be empty
  double time_s = 0;        // forward + backward of one micro-batch, seconds (any unit works)
  int64_t memory_bytes = 0; // what the layer adds to its stage's memory
  // What profile_layers measured besides (zero for a cost the user gave):
  double forward_s = 0;          // the forward alone; backward is time_s - forward_s
  int64_t parameter_bytes = 0;   // the layer's parameters
  int64_t activation_bytes = 0;  // what one forward keeps alive for backward (saved tensors and output)
  int64_t output_bytes = 0;      // the output alone (what a pipeline stage sends on)
};

struct ProfileOptions {
  int warmup = 1;   // untimed forward+backward runs per layer first
  int repeats = 3;  // timed runs per layer; the median is kept
  // memory_bytes = 2 x parameter bytes (weights and gradients) + this many
  // times the bytes one forward keeps alive for backward (its saved tensors and
  // output). Set it to the micro-batches a stage holds at once: M for GPipe,
  // P for 1F1B's first stage.
  int activation_copies = 1;
  // When set, called before each forward+backward run; what it returns is
  // held for that run only (e.g. a fresh autocast scope, so that the weights'
  // casts are made in every run as in every training step, not cached once).
  std::function<std::shared_ptr<void>()> scope;
};

// Profiles each layer of `model` on `sample` (one micro-batch, on the model's
// device): layer i runs on layer i-1's output, forward then backward of
// ones, warmup + repeats times. On CPU, the activation bytes come from the
// tracking allocator (installed by this call, see paisoar/memory); on CUDA from
// the caching allocator. Gradients, BatchNorm running statistics and other
// buffers are restored afterwards. Throws c10::Error naming the layer that fails.
std::vector<LayerCost> profile_layers(const models::LayerSequence& model, const torch::Tensor& sample,
                                      const ProfileOptions& options = {});
// The same over a Sequential's children.
std::vector<LayerCost> profile_layers(const torch::nn::Sequential& model, const torch::Tensor& sample,
                                      const ProfileOptions& options = {});

}  // namespace paisoar::pipeline
