// VocabParallelEmbedding: an Embedding whose vocabulary (rows) is split
// across the ranks of a tensor-parallel group (Megatron-LM's layer).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

#include "paisoar/tensor_parallel/mappings.h"
#include "paisoar/tensor_parallel/sharding.h"

namespace paisoar::tensor_parallel {

// Rank r holds rows [r * V/size, (r+1) * V/size) of the [V, dim] table.
// Forward: ids outside this rank's range look up a zero row (masked), then
// reduce_from_region sums the ranks' partial results, so every rank gets the
// full embedding. Ids must be int64 in [0, V) and the same on every rank.
// Throws c10::Error naming the sizes when size does not divide V, and naming
// the id when one is out of range.
class VocabParallelEmbeddingImpl : public torch::nn::Module, public SplitLayer {
 public:
  // Initialises the shard normal(0, 1), as torch::nn::Embedding does the full
  // table; load_full sets it from a full layer.
  VocabParallelEmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim, Group group);
  torch::Tensor forward(const torch::Tensor& ids);

  // Copies this rank's rows of `full` (no autograd). Throws c10::Error when
  // the table's shape differs.
  void load_full(const torch::nn::Embedding& full);

  std::vector<std::pair<std::string, ParameterSplit>> parameter_splits() const override;
  const Group& group() const { return group_; }
  int64_t vocab_begin() const { return begin_; }
  int64_t vocab_end() const { return end_; }

  torch::Tensor weight;  // [num_embeddings / size, embedding_dim]

 private:
  int64_t num_embeddings_, embedding_dim_, begin_, end_;
  Group group_;
};
TORCH_MODULE(VocabParallelEmbedding);

}  // namespace paisoar::tensor_parallel
