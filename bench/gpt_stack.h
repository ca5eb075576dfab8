// gpt_stack: models::Gpt as a torch::nn::Sequential of layers (token and
// position embedding, the blocks, final LayerNorm and lm_head), the form
// zero::LayerList needs for ZeRO stage 3. Unlike models::Gpt the lm_head is
// its own Linear, not tied to the token embedding: LayerList does not allow a
// parameter shared by two layers. So the stack has V*C more parameters than
// models::Gpt with the same options:
//   2*V*C + block_size*C + n_layer*(12*C^2 + 13*C) + 2*C   (bias)
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "paisoar/models/gpt.h"

namespace paisoar::bench {

// idx [B, T] int64 -> wte(idx) + wpe(0..T-1), [B, T, C] (no dropout).
class GptEmbeddingImpl : public torch::nn::Module {
 public:
  GptEmbeddingImpl(torch::nn::Embedding wte, torch::nn::Embedding wpe);
  torch::Tensor forward(const torch::Tensor& idx);

  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
};
TORCH_MODULE(GptEmbedding);

// x [B, T, C] -> lm_head(ln_f(x)), logits [B, T, V].
class GptHeadImpl : public torch::nn::Module {
 public:
  GptHeadImpl(models::GptLayerNorm ln_f, torch::nn::Linear lm_head);
  torch::Tensor forward(const torch::Tensor& x);

  models::GptLayerNorm ln_f{nullptr};
  torch::nn::Linear lm_head{nullptr};
};
TORCH_MODULE(GptHead);

// The layers "embed", "h0".."h{n_layer-1}", "head", initialised as
// models::Gpt (the lm_head weight normal(0, 0.02), no bias).
torch::nn::Sequential gpt_stack(const models::GptOptions& options);

}  // namespace paisoar::bench
