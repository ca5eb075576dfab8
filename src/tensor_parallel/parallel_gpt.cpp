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
  return models::run_layers(layers(), idx);
}

torch::Tensor ParallelGptImpl::forward_logits_shard(const torch::Tensor& idx) {
  std::vector<models::Layer> all = layers();
  all.back().forward = [ln_f = ln_f, wte = wte, group = group_](const torch::Tensor& x) mutable {
    return torch::nn::functional::linear(copy_to_region(ln_f(x), group), wte->weight);
  };
  return models::run_layers(all, idx);
}

std::vector<models::Layer> ParallelGptImpl::layers() {
  std::vector<models::Layer> out;
  out.push_back(models::gpt_embed_layer(
      wte.ptr(), [e = wte.ptr()](const torch::Tensor& idx) { return e->forward(idx); }, wpe, options_, "ParallelGpt"));
  for (size_t i = 0; i < h->size(); ++i) {
    auto block = h->ptr<ParallelGptBlockImpl>(i);
    out.push_back({"h." + std::to_string(i), {{"transformer.h." + std::to_string(i), block}},
                   [block](const torch::Tensor& x) { return block->forward(x); }});
  }
  // The lm_head, tied to wte's shard: this rank's vocabulary rows, gathered
  // (they are contiguous per rank).
  out.push_back({"head", {{"transformer.ln_f", ln_f.ptr()}, {"transformer.wte", wte.ptr()}},
                 [ln_f = ln_f, wte = wte, group = group_](const torch::Tensor& x) mutable {
                   return gather_from_region(
                       torch::nn::functional::linear(copy_to_region(ln_f(x), group), wte->weight), group);
                 }});
  return out;
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
