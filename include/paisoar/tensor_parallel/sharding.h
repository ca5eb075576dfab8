// How full tensors are cut into per-rank shards and put back together: the
// one place that knows the layout, used by the parallel layers to load a full
// layer's weights and by tests and checkpoints to reassemble them.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "paisoar/comm/communicator.h"

namespace paisoar::tensor_parallel {

// n / size; throws c10::Error naming the layer, what n counts and both
// numbers when size does not divide n (e.g. "ColumnParallelLinear: out_features
// (10) is not divisible by the tensor-parallel group size (4)").
int64_t divide_evenly(int64_t n, int size, const std::string& what, const std::string& layer);

// Rank `rank`'s shard of `full` along `dim` for a group of `size`. With
// parts > 1 the dimension is `parts` equal blocks (e.g. q, k, v of a fused
// projection) and the shard is this rank's slice of each block, concatenated.
// Returns a contiguous copy. Throws c10::Error when the sizes do not divide.
torch::Tensor shard_of(const torch::Tensor& full, int64_t dim, int rank, int size, int64_t parts = 1);

// The inverse of shard_of, collective over `group`: every rank's shard
// gathered into the full tensor (on every rank). No autograd.
torch::Tensor gather_shards(const torch::Tensor& shard, int64_t dim, comm::Communicator& group,
                            int64_t parts = 1);

}  // namespace paisoar::tensor_parallel
