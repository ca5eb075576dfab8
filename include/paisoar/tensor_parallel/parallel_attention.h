// ParallelCausalSelfAttention: the GPT block's attention with its heads split
// across a tensor-parallel group: c_attn column-parallel (each rank gets the
// q, k and v of its heads), attention on local heads, c_proj row-parallel.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

#include "paisoar/models/gpt.h"
#include "paisoar/tensor_parallel/column_parallel_linear.h"
#include "paisoar/tensor_parallel/row_parallel_linear.h"

namespace paisoar::tensor_parallel {

// Computes what models::CausalSelfAttention computes (B x T x C ->
// B x T x C, replicated in and out); rank r holds heads
// [r * n_head/size, (r+1) * n_head/size). One allreduce in forward, one in
// backward. Throws c10::Error naming the sizes when size does not divide
// n_head. Dropout on the attention weights draws per rank (different heads);
// dropout on the replicated output needs every rank seeded alike.
class ParallelCausalSelfAttentionImpl : public torch::nn::Module {
 public:
  ParallelCausalSelfAttentionImpl(const models::GptOptions& options, Group group);
  torch::Tensor forward(const torch::Tensor& x);

  // This rank's shards of a full CausalSelfAttention built with the same options.
  void load_full(const models::CausalSelfAttentionImpl& full);

  int64_t local_heads() const { return local_heads_; }

  ColumnParallelLinear c_attn{nullptr};  // fused q, k, v: 3 parts
  RowParallelLinear c_proj{nullptr};

 private:
  int64_t local_heads_, head_size_;
  double dropout_;
};
TORCH_MODULE(ParallelCausalSelfAttention);

}  // namespace paisoar::tensor_parallel
