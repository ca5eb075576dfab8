// ParallelGptBlock: replicated LayerNorms around the parallel attention and MLP.
#include "paisoar/tensor_parallel/parallel_gpt_block.h"

namespace paisoar::tensor_parallel {

void copy_layer_norm(models::GptLayerNormImpl& to, const models::GptLayerNormImpl& from) {
  TORCH_CHECK(to.weight.sizes() == from.weight.sizes() && to.bias.defined() == from.bias.defined(),
              "load_full: the full model's LayerNorm is ", from.weight.sizes(),
              from.bias.defined() ? " with" : " without", " bias, this model's ", to.weight.sizes(),
              to.bias.defined() ? " with" : " without", " bias");
  torch::NoGradGuard no_grad;
  to.weight.copy_(from.weight);
  if (to.bias.defined()) to.bias.copy_(from.bias);
}

ParallelGptBlockImpl::ParallelGptBlockImpl(const models::GptOptions& options, Group group) {
  ln_1 = register_module("ln_1", models::GptLayerNorm(options.n_embd, options.bias));
  attn = register_module("attn", ParallelCausalSelfAttention(options, group));
  ln_2 = register_module("ln_2", models::GptLayerNorm(options.n_embd, options.bias));
  mlp = register_module("mlp", ParallelMlp(options, group));
}

torch::Tensor ParallelGptBlockImpl::forward(torch::Tensor x) {
  x = x + attn(ln_1(x));
  return x + mlp(ln_2(x));
}

void ParallelGptBlockImpl::load_full(const models::GptBlockImpl& full) {
  copy_layer_norm(*ln_1, *full.ln_1);
  attn->load_full(*full.attn);
  copy_layer_norm(*ln_2, *full.ln_2);
  mlp->load_full(*full.mlp);
}

}  // namespace paisoar::tensor_parallel
