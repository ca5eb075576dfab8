// ParallelCausalSelfAttention: models::CausalSelfAttention's computation on
// this rank's heads, between a column- and a row-parallel projection.
#include "paisoar/tensor_parallel/parallel_attention.h"

#include <cmath>
#include <limits>

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
  const int64_t B = x.size(0), T = x.size(1), local = local_heads_ * head_size_;
  auto qkv = c_attn(x).split(local, /*dim=*/2);
  // [B, T, local] -> [B, local_heads, T, hs]
  auto heads = [&](const torch::Tensor& t) { return t.view({B, T, local_heads_, head_size_}).transpose(1, 2); };
  auto q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
  auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(head_size_)));
  auto future = torch::ones({T, T}, x.options().dtype(torch::kBool)).triu(1);
  att = torch::softmax(att.masked_fill(future, -std::numeric_limits<double>::infinity()), -1);
  att = torch::dropout(att, dropout_, is_training());
  auto y = torch::matmul(att, v).transpose(1, 2).contiguous().view({B, T, local});
  return torch::dropout(c_proj(y), dropout_, is_training());
}

void ParallelCausalSelfAttentionImpl::load_full(const models::CausalSelfAttentionImpl& full) {
  c_attn->load_full(full.c_attn);
  c_proj->load_full(full.c_proj);
}

}  // namespace paisoar::tensor_parallel
