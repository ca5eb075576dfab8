// ParallelCausalSelfAttention: models::CausalSelfAttention's computation on
// this rank's heads, between a column- and a row-parallel projection.
#include "paisoar/tensor_parallel/parallel_attention.h"


#include "paisoar/tensor_parallel/sharding.h"

namespace paisoar::tensor_parallel {
namespace {

Group checked_group(Group group, const models::GptOptions& options) {
  TORCH_CHECK(group != nullptr, "ParallelCausalSelfAttention: the tensor-parallel group is null");
  TORCH_CHECK(options.n_head >= 1 && options.n_embd % options.n_head == 0, "ParallelCausalSelfAttention: n_embd (",
              options.n_embd, ") must be a multiple of n_head (", options.n_head, ")");
  divide_evenly(options.n_head, group->size(), "n_head", "ParallelCausalSelfAttention");
  return group;
}

}  // namespace

ParallelCausalSelfAttentionImpl::ParallelCausalSelfAttentionImpl(const models::GptOptions& options, Group group)
    : local_heads_(options.n_head / checked_group(group, options)->size()),
      head_size_(options.n_embd / options.n_head),
      dropout_(options.dropout) {
  ColumnParallelLinearOptions qkv;
  qkv.bias = options.bias;
  qkv.gather_output = false;
  qkv.fused_parts = 3;
  RowParallelLinearOptions proj;
  proj.bias = options.bias;
  proj.input_is_parallel = true;
  c_attn = register_module("c_attn", ColumnParallelLinear(options.n_embd, 3 * options.n_embd, group, qkv));
  c_proj = register_module("c_proj", RowParallelLinear(options.n_embd, options.n_embd, group, proj));
}

torch::Tensor ParallelCausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  // This rank's heads: c_attn's output is their fused q|k|v ([B, T, 3 * local]).
  auto y = models::causal_attention(c_attn(x), local_heads_, dropout_, is_training());
  return torch::dropout(c_proj(y), dropout_, is_training());
}

void ParallelCausalSelfAttentionImpl::load_full(const models::CausalSelfAttentionImpl& full) {
  c_attn->load_full(full.c_attn);
  c_proj->load_full(full.c_proj);
}

}  // namespace paisoar::tensor_parallel
