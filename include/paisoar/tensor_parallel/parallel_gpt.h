// ParallelGpt: models::Gpt split across a tensor-parallel group: the token
// embedding vocab-parallel, the blocks ParallelGptBlocks, and the lm_head tied
// to the embedding's shard, its logits gathered to the full vocabulary (or
// left split for vocab_parallel_cross_entropy).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/pimpl.h>

#include "paisoar/models/gpt.h"
#include "paisoar/tensor_parallel/parallel_gpt_block.h"
#include "paisoar/tensor_parallel/vocab_parallel_embedding.h"

namespace paisoar::tensor_parallel {

// idx [B, T] int64 -> logits [B, T, vocab_size], the same on every rank, as
// models::Gpt computes them: logits = gather_from_region(ln_f(x) @ wte_r^T),
// rank r computing the logits of its vocabulary rows. Parameter names are
// models::Gpt's (transformer.wte.weight holds this rank's rows). wpe and the
// LayerNorms are replicated. Throws c10::Error naming the sizes when the group
// size does not divide vocab_size, n_head or 4 * n_embd.
// Layers: models::Gpt's (embed, h.0 .., head), the head gathering the logits.
class ParallelGptImpl : public torch::nn::Module, public models::Layered {
 public:
  ParallelGptImpl(const models::GptOptions& options, Group group);
  torch::Tensor forward(const torch::Tensor& idx);
  std::vector<models::Layer> layers() override;
  // The logits of this rank's vocabulary rows only, [B, T, vocab_size / size]
  // (columns [r V/size, (r+1) V/size) of forward's), without the gather:
  // train with vocab_parallel_cross_entropy(logits_shard, targets, group) so
  // no rank holds [B, T, V]. forward(idx) is gather_from_region of this.
  torch::Tensor forward_logits_shard(const torch::Tensor& idx);

  // This rank's shards of a full Gpt built with the same options.
  void load_full(const models::GptImpl& full);

  VocabParallelEmbedding wte{nullptr};
  torch::nn::Embedding wpe{nullptr};
  torch::nn::ModuleList h{nullptr};  // of ParallelGptBlock
  models::GptLayerNorm ln_f{nullptr};

 private:
  models::GptOptions options_;
  Group group_;
};
TORCH_MODULE(ParallelGpt);

}  // namespace paisoar::tensor_parallel
