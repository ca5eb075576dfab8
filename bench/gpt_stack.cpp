// gpt_stack: the layers are models::Gpt's own modules, re-registered in a
// Sequential; only the lm_head is new.
#include "bench/gpt_stack.h"

#include <torch/nn/init.h>
#include <torch/torch.h>

#include <string>

namespace paisoar::bench {

GptEmbeddingImpl::GptEmbeddingImpl(torch::nn::Embedding wte_, torch::nn::Embedding wpe_) {
  wte = register_module("wte", std::move(wte_));
  wpe = register_module("wpe", std::move(wpe_));
}

torch::Tensor GptEmbeddingImpl::forward(const torch::Tensor& idx) {
  TORCH_CHECK(idx.dim() == 2 && idx.scalar_type() == torch::kLong,
              "GptEmbedding takes token ids [B, T] as int64, got ", idx.sizes(), " of ", idx.scalar_type());
  return wte(idx) + wpe(torch::arange(idx.size(1), idx.options()));
}

GptHeadImpl::GptHeadImpl(models::GptLayerNorm ln_f_, torch::nn::Linear lm_head_) {
  ln_f = register_module("ln_f", std::move(ln_f_));
  lm_head = register_module("lm_head", std::move(lm_head_));
}

torch::Tensor GptHeadImpl::forward(const torch::Tensor& x) { return lm_head(ln_f(x)); }

torch::nn::Sequential gpt_stack(const models::GptOptions& options) {
  models::Gpt gpt(options);  // validates the options and initialises the shared modules
  torch::nn::Linear lm_head(torch::nn::LinearOptions(options.n_embd, options.vocab_size).bias(false));
  {
    torch::NoGradGuard no_grad;
    torch::nn::init::normal_(lm_head->weight, 0.0, 0.02);
  }
  torch::nn::Sequential stack;
  stack->push_back("embed", GptEmbedding(gpt->wte, gpt->wpe));
  for (size_t i = 0; i < gpt->h->size(); ++i) {
    stack->push_back("h" + std::to_string(i), gpt->h->ptr<models::GptBlockImpl>(i));
  }
  stack->push_back("head", GptHead(gpt->ln_f, lm_head));
  return stack;
}

}  // namespace paisoar::bench
