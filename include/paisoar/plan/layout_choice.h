// One layout the planner may choose for a run (data x pipeline x tensor, the
// ZeRO stage, micro-batches, activation checkpointing), the `--set`
// overrides that turn a config into it, and every layout a world of N ranks
// can take for a config, with the reason each one left out was dropped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "paisoar/hybrid/parallel_layout.h"
#include "paisoar/train/train_config.h"

namespace paisoar::plan {

struct LayoutChoice {
  hybrid::ParallelLayout ranks;
  int zero_stage = 0;
  // Micro-batches per optimizer step: the pipeline's (parallel.micro_batches)
  // with one, train.grad_accumulation without.
  int64_t micro_batches = 1;
  bool checkpointing = false;  // activation_checkpointing ["*"]: every region recomputed in backward

  // "parallel.data=2", ..., "zero.stage=1", "activation_checkpointing=[]":
  // every key the planner chooses, as `paisoar train --set` takes them.
  std::vector<std::string> overrides() const;
  // `config` with those keys set (and parallel.auto off).
  train::TrainConfig apply(const train::TrainConfig& config) const;
  // "data 2 x pipeline 1 x tensor 1, ZeRO 2, 2 micro-batches, checkpointing".
  std::string to_string() const;
  // The rows of one micro-batch on one replica for a global batch.
  int64_t rows(int64_t global_batch) const { return global_batch / (ranks.data * micro_batches); }
};

struct DroppedLayout {
  LayoutChoice layout;
  std::string why;  // in the words `paisoar train` would refuse it with
};

struct Candidates {
  std::vector<LayoutChoice> layouts;
  std::vector<DroppedLayout> dropped;
};

// Every data x pipeline x tensor whose product is `world_size`; ZeRO 0-3
// where the data axis has more than one rank (0 elsewhere: ZeRO over one
// rank shards nothing); 1 or 2 micro-batches per pipeline stage (1 or 2
// accumulated ones without a pipeline); checkpointing off and on. A layout
// the config's checks or the model refuse is in `dropped` with their words.
Candidates enumerate_layouts(const train::TrainConfig& config, int world_size);

}  // namespace paisoar::plan
