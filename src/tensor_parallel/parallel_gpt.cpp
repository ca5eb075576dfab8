// ParallelGpt: the reference GPT over a tensor-parallel group, with the
// vocab-parallel embedding reused as the lm_head's weight shard.
#include "paisoar/tensor_parallel/parallel_gpt.h"

#include <torch/nn/functional/linear.h>

namespace paisoar::tensor_parallel {

ParallelGptImpl::ParallelGptImpl(const models::GptOptions& options, Group group)
    : options_(options), group_(std::move(group)) {
  TORCH_CHECK(group_ != nullptr, "ParallelGpt: the tensor-parallel group is null");
  auto transformer = register_module("transformer", std::make_shared<torch::nn::Module>("Transformer"));
  wte = transformer->register_module("wte", VocabParallelEmbedding(options.vocab_size, options.n_embd, group_));
  wpe = transformer->register_module("wpe", torch::nn::Embedding(options.block_size, options.n_embd));
  h = transformer->register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.n_layer; ++i) h->push_back(ParallelGptBlock(options, group_));
  ln_f = transformer->register_module("ln_f", models::GptLayerNorm(options.n_embd, options.bias));
}

torch::Tensor ParallelGptImpl::forward(const torch::Tensor& idx) {
  return gather_from_region(forward_logits_shard(idx), group_);  // vocabulary rows are contiguous per rank
}

torch::Tensor ParallelGptImpl::forward_logits_shard(const torch::Tensor& idx) {
  TORCH_CHECK(idx.dim() == 2 && idx.scalar_type() == torch::kLong, "ParallelGpt takes token ids [B, T] as int64, got ",
              idx.sizes(), " of ", idx.scalar_type());
  const int64_t T = idx.size(1);
  TORCH_CHECK(T <= options_.block_size, "ParallelGpt: the sequence has ", T, " tokens but block_size is ",
              options_.block_size);
  auto pos = torch::arange(T, idx.options());
  auto x = torch::dropout(wte(idx) + wpe(pos), options_.dropout, is_training());
  for (const auto& block : *h) x = block->as<ParallelGptBlock>()->forward(x);
  return torch::nn::functional::linear(copy_to_region(ln_f(x), group_), wte->weight);
}

void ParallelGptImpl::load_full(const models::GptImpl& full) {
  TORCH_CHECK(full.h->size() == h->size(), "ParallelGpt::load_full: the full model has ", full.h->size(),
              " blocks, this one ", h->size());
  wte->load_full(full.wte);
  {
    torch::NoGradGuard no_grad;
    TORCH_CHECK(wpe->weight.sizes() == full.wpe->weight.sizes(), "ParallelGpt::load_full: the full model's wpe is ",
                full.wpe->weight.sizes(), ", this one's ", wpe->weight.sizes());
    wpe->weight.copy_(full.wpe->weight);
  }
  for (size_t i = 0; i < h->size(); ++i) {
    h[i]->as<ParallelGptBlock>()->load_full(*full.h->ptr(i)->as<models::GptBlock>());
  }
  copy_layer_norm(*ln_f, *full.ln_f);
}

}  // namespace paisoar::tensor_parallel
