// ParallelGptBlock: models::GptBlock with its attention and MLP split across a
// tensor-parallel group; the LayerNorms are replicated. Two allreduces per
// forward, two per backward.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "paisoar/models/gpt.h"
#include "paisoar/tensor_parallel/parallel_attention.h"
#include "paisoar/tensor_parallel/parallel_mlp.h"

namespace paisoar::tensor_parallel {

// x + attn(ln_1(x)), then x + mlp(ln_2(x)), as models::GptBlock, with the
// same child names. Input and output are replicated: every rank passes the
// same x and gets the same result. The LayerNorms' gradients are the full
// block's on every rank (the copy_to_region backward sums them).
class ParallelGptBlockImpl : public torch::nn::Module {
 public:
  ParallelGptBlockImpl(const models::GptOptions& options, Group group);
  torch::Tensor forward(torch::Tensor x);

  // Copies the LayerNorms and this rank's shards of a full GptBlock built
  // with the same options.
  void load_full(const models::GptBlockImpl& full);

  models::GptLayerNorm ln_1{nullptr}, ln_2{nullptr};
  ParallelCausalSelfAttention attn{nullptr};
  ParallelMlp mlp{nullptr};
};
TORCH_MODULE(ParallelGptBlock);

// Copies a replicated LayerNorm (no autograd); throws c10::Error when the
// shapes or the presence of a bias differ.
void copy_layer_norm(models::GptLayerNormImpl& to, const models::GptLayerNormImpl& from);

}  // namespace paisoar::tensor_parallel
