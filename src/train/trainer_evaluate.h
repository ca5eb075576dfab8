// The Trainer's evaluation pass: accuracy over the evaluation set, each
// data-parallel replica scoring its own slice, through the model's forward or
// a pipeline's forward-only pass.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>

#include "paisoar/comm/communicator.h"
#include "paisoar/data/data_loader.h"
#include "paisoar/train/trainer.h"
#include "src/config/precision_context.h"

namespace paisoar::train {

// Who scores which evaluation samples: slice `index` of `count` contiguous
// slices (the data-parallel coordinate), through `forward`, which returns the
// logits (undefined on pipeline stages other than the last). Only ranks with
// `counts` add their hits (one per replica: the last stage, tensor rank 0).
struct EvalRole {
  int64_t index = 0, count = 1;
  bool counts = true;
  std::function<torch::Tensor(const torch::Tensor&)> forward;
  // What the forward runs its layer regions through (ZeRO-3 gathers
  // parameters there); null for none.
  amp::RegionRunner* regions = nullptr;
  // A bad evaluation sample stops the run (Raise) or is left out of the
  // score (Skip), as data.on_error says for training samples too.
  data::OnError on_error = data::OnError::Raise;
};

// Accuracy (percent) over the first `limit` evaluation samples (0: all), under
// the run's precision context (without activation checkpointing: no
// gradients). Collective over `comm` (the world).
double evaluate(const TrainTask& task, comm::Communicator& comm, const EvalRole& role, int64_t workers,
                const Precision& precision, int64_t limit);

}  // namespace paisoar::train
