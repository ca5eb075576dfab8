// Placements: what each rank holds of a model's training state, described
// once from the layout (data x pipeline x tensor ranks) and what ZeRO shards,
// in the vocabulary of DTensor placements: along the pipeline axis a rank
// holds its stage's layers, along the tensor axis its shard of each split
// parameter (and the replicated rest), along the data axis a replica, or a
// flat 1/D shard of each kind of state that is sharded (FSDP's sharding
// strategies: optimizer state, gradients, parameters). The run's parts read
// it and ask it what they may do (forward_is_local, shards); none of them
// asks for a ZeRO stage or a layout kind.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "paisoar/hybrid/parallel_layout.h"

namespace paisoar::layout {

// The kinds of per-parameter state a rank holds.
enum class StateKind { Parameters, Gradients, OptimizerState };

// Which kinds are sharded over the data axis. ZeRO's stages are the three
// cumulative choices; the stage number itself is read only where ZeRO's own
// options take it (stage()).
struct DataSharding {
  bool optimizer_state = false;  // ZeRO-1 and up
  bool gradients = false;        // ZeRO-2 and up
  bool parameters = false;       // ZeRO-3: gathered per layer around its forward and backward

  // 0 (nothing sharded: DDP) to 3. Throws c10::ValueError for another number.
  static DataSharding of_zero_stage(int64_t stage);
  bool any() const { return optimizer_state || gradients || parameters; }
  bool shards(StateKind kind) const;
  // The next kind sharded as well (optimizer state, then gradients, then
  // parameters); nullopt when everything is.
  std::optional<DataSharding> more() const;
  int stage() const;  // the ZeRO stage these choices are
  // "none", "optimizer state", "optimizer state and gradients", "optimizer
  // state, gradients and parameters".
  std::string what() const;
};

// This rank's coordinates in the mesh.
struct MeshCoordinate {
  int data = 0, pipeline = 0, tensor = 0;
};

class Placements {
 public:
  Placements() = default;  // one rank holding everything
  // Throws c10::ValueError when `at` lies outside `mesh`.
  Placements(hybrid::ParallelLayout mesh, DataSharding sharding, MeshCoordinate at);

  const hybrid::ParallelLayout& mesh() const { return mesh_; }
  const DataSharding& sharding() const { return sharding_; }
  const MeshCoordinate& at() const { return at_; }

  // How many ranks share the bytes of `kind` that one replica of this rank's
  // part holds (the data size where it is sharded, else 1).
  int64_t shards(StateKind kind) const;
  // Each rank holds a part of the model (a stage, tensor shards).
  bool holds_part() const { return mesh_.model_parallel(); }
  // The rank can run its model's forward by itself, for a probe (predicting
  // memory, tracing a non-finite loss): nothing in it talks to another rank
  // (no stage boundary, no tensor shard, no gathered parameter).
  bool forward_is_local() const { return !holds_part() && !sharding_.parameters; }
  // The rank holds the whole output of the model for the evaluation's count:
  // the last stage, and one rank of a tensor group (the others hold copies).
  bool counts_outputs(bool last_stage) const { return last_stage && at_.tensor == 0; }

  // The same ranks with `sharding` instead.
  Placements with(DataSharding sharding) const { return Placements(mesh_, sharding, at_); }

  // "data 2 x pipeline 2 x tensor 1, ZeRO-3 (optimizer state, gradients and
  // parameters sharded over the 2 data ranks)", "... DDP".
  std::string describe() const;

 private:
  hybrid::ParallelLayout mesh_;
  DataSharding sharding_;
  MeshCoordinate at_;
};

}  // namespace paisoar::layout
