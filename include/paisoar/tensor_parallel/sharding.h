// How full tensors are cut into per-rank shards and put back together: the
// one place that knows the layout, used by the parallel layers to load a full
// layer's weights and by tests and checkpoints to reassemble them; and which
// parameters of a model the parallel layers split (SplitLayer), which a
// checkpoint records so another group size can join or cut them.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

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

// Joins every rank's shard (in rank order, each as shard_of cut it) into
// the full tensor, without a group: shard_of's inverse for files.
torch::Tensor join_shards(const std::vector<torch::Tensor>& shards, int64_t dim, int64_t parts = 1);

// How a parallel layer splits one of its parameters: along `dim`, in `parts`
// fused blocks (shard_of's arguments). Parameters without one are whole on
// every rank of the group.
struct ParameterSplit {
  int64_t dim = 0;
  int64_t parts = 1;
  bool operator==(const ParameterSplit& o) const { return dim == o.dim && parts == o.parts; }
};

// A layer holding shards of its parameters: ColumnParallelLinear,
// RowParallelLinear, VocabParallelEmbedding.
class SplitLayer {
 public:
  virtual ~SplitLayer() = default;
  // Its split parameters, by their names in the layer ("weight", "bias").
  virtual std::vector<std::pair<std::string, ParameterSplit>> parameter_splits() const = 0;
};

// Every split parameter of `model` (its SplitLayers, at any depth), by its
// name in model.named_parameters().
std::map<std::string, ParameterSplit> parameter_splits(const torch::nn::Module& model);

// ParameterSplit as a checkpoint's metadata holds it ("0", "1/3": dim, and
// the fused parts when more than one), and back; parse_split throws
// c10::Error naming `what` for any other text.
std::string split_text(const ParameterSplit& split);
ParameterSplit parse_split(const std::string& text, const std::string& what);

}  // namespace paisoar::tensor_parallel
