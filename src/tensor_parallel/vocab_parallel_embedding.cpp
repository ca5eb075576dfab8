// VocabParallelEmbedding: masked lookup in this rank's rows, then one
// allreduce; loading from a full torch::nn::Embedding.
#include "paisoar/tensor_parallel/vocab_parallel_embedding.h"

#include "paisoar/tensor_parallel/sharding.h"

namespace paisoar::tensor_parallel {

VocabParallelEmbeddingImpl::VocabParallelEmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim,
                                                       Group group)
    : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim), group_(std::move(group)) {
  TORCH_CHECK(group_ != nullptr, "VocabParallelEmbedding: the tensor-parallel group is null");
  const int64_t rows = divide_evenly(num_embeddings, group_->size(), "num_embeddings",
                                     "VocabParallelEmbedding");
  begin_ = group_->rank() * rows;
  end_ = begin_ + rows;
  weight = register_parameter("weight", torch::randn({rows, embedding_dim}));
}

torch::Tensor VocabParallelEmbeddingImpl::forward(const torch::Tensor& ids) {
  TORCH_CHECK(ids.scalar_type() == torch::kLong, "VocabParallelEmbedding takes int64 ids, got ",
              ids.scalar_type());
  if (ids.numel() > 0) {
    const int64_t lo = ids.min().item<int64_t>(), hi = ids.max().item<int64_t>();
    TORCH_CHECK(lo >= 0 && hi < num_embeddings_, "VocabParallelEmbedding: id ", lo < 0 ? lo : hi,
                " is outside the vocabulary [0, ", num_embeddings_, ")");
  }
  torch::Tensor outside = (ids < begin_).logical_or(ids >= end_);
  torch::Tensor local = (ids - begin_).masked_fill(outside, 0);
  torch::Tensor partial = torch::embedding(weight, local).masked_fill(outside.unsqueeze(-1), 0.0);
  return reduce_from_region(partial, group_);
}

std::vector<std::pair<std::string, ParameterSplit>> VocabParallelEmbeddingImpl::parameter_splits() const {
  return {{"weight", {0, 1}}};
}

void VocabParallelEmbeddingImpl::load_full(const torch::nn::Embedding& full) {
  TORCH_CHECK(full->weight.size(0) == num_embeddings_ && full->weight.size(1) == embedding_dim_,
              "VocabParallelEmbedding::load_full: the full table is ", full->weight.sizes(),
              " but this layer is [", num_embeddings_, ", ", embedding_dim_, "]");
  torch::NoGradGuard no_grad;
  weight.copy_(shard_of(full->weight, 0, group_->rank(), group_->size()));
}

}  // namespace paisoar::tensor_parallel
