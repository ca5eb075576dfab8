// The tensor-parallel side of resharding a checkpoint: which parameters of a
// model part are shards (recorded in its files' metadata as
// "tensor.split.<name>"), the shards of one pipeline stage joined into whole
// parameters, and a whole model cut into one rank's shards, so a checkpoint
// written with one parallel.tensor resumes with another (1 included).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "paisoar/format/tensor_file.h"
#include "paisoar/tensor_parallel/sharding.h"
#include "src/zero/shard_set.h"

namespace paisoar::train {

inline constexpr const char* kSplitKeyPrefix = "tensor.split.";
// Present in every part written since the splits are recorded (a part with
// none of them then holds no shard).
inline constexpr const char* kSplitsRecordedKey = "tensor.splits_recorded";

// "tensor.split.<name>" -> "<dim>[/<parts>]" for every split parameter of
// `part` (this rank's part of the model), and kSplitsRecordedKey, for its
// files' metadata.
format::Metadata split_metadata(const torch::nn::Module& part);

// The parts t0, t1, ... of one model part (one pipeline stage), in tensor
// rank order, joined: each split parameter (and its elementwise optimizer
// state) concatenated as its metadata says, the rest taken from t0. Throws
// c10::Error naming the parts when they do not hold the same parameters.
zero::detail::ShardSet join_tensor_shards(std::vector<zero::detail::ShardSet> shards);

// Cuts `set` (whole parameters, named as the model whose splits these are)
// down to tensor rank `rank`'s shards of a group of `size`.
void cut_tensor_shard(zero::detail::ShardSet& set, const std::map<std::string, tensor_parallel::ParameterSplit>& splits,
                      int rank, int size);

}  // namespace paisoar::train
