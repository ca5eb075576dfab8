// models::Gpt: a small GPT-style decoder-only transformer (nanoGPT's layout
// and parameter names), the reference language model for the benchmarks and
// for tensor and pipeline parallelism, which split it along its blocks.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "paisoar/models/layer_sequence.h"

namespace paisoar::models {

struct GptOptions {
  int64_t vocab_size = 256;  // token ids are in [0, vocab_size)
  int64_t block_size = 128;  // the longest sequence forward accepts
  int64_t n_layer = 4;
  int64_t n_head = 4;        // must divide n_embd
  int64_t n_embd = 128;
  double dropout = 0.0;      // after the embeddings, on attention weights and on each residual branch
  bool bias = true;          // biases in the Linears and LayerNorms
};

// LayerNorm over the last dimension (eps 1e-5) with an optional bias, which
// torch::nn::LayerNorm lacks. Parameters: weight [n] (ones), bias [n] (zeros)
// when `bias`.
class GptLayerNormImpl : public torch::nn::Module {
 public:
  GptLayerNormImpl(int64_t n, bool bias);
  torch::Tensor forward(const torch::Tensor& x);

  torch::Tensor weight, bias;  // bias undefined without `bias`
};
TORCH_MODULE(GptLayerNorm);

// Multi-head causal self-attention, B x T x C -> B x T x C: c_attn (the fused
// q, k, v projection, C -> 3C, in that order) then per head
// softmax(q k^T / sqrt(C / n_head)) with future positions masked, times v,
// heads concatenated, c_proj (C -> C). The mask is built per call, so there is
// no mask buffer: the state_dict holds the parameters only.
// The attention itself, shared with tensor parallelism's per-rank heads: qkv is
// the fused projection [B, T, 3 * H * hs] (q, k, v each H heads of size hs);
// returns the heads' outputs concatenated, [B, T, H * hs], before c_proj.
// Attention weights get dropout `dropout` when `training`.
torch::Tensor causal_attention(const torch::Tensor& qkv, int64_t heads, double dropout, bool training);

class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  explicit CausalSelfAttentionImpl(const GptOptions& options);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear c_attn{nullptr}, c_proj{nullptr};

 private:
  int64_t n_head_;
  double dropout_;
};
TORCH_MODULE(CausalSelfAttention);

// The block's feed-forward part, B x T x C -> B x T x C: c_fc (C -> 4C),
// GELU (exact, erf), c_proj (4C -> C), dropout.
class GptMlpImpl : public torch::nn::Module {
 public:
  explicit GptMlpImpl(const GptOptions& options);
  torch::Tensor forward(const torch::Tensor& x);

  torch::nn::Linear c_fc{nullptr}, c_proj{nullptr};

 private:
  double dropout_;
};
TORCH_MODULE(GptMlp);

// One pre-LayerNorm transformer block: x + attn(ln_1(x)), then
// x + mlp(ln_2(x)). Children: ln_1, attn, ln_2, mlp.
class GptBlockImpl : public torch::nn::Module {
 public:
  explicit GptBlockImpl(const GptOptions& options);
  torch::Tensor forward(torch::Tensor x);

  GptLayerNorm ln_1{nullptr}, ln_2{nullptr};
  CausalSelfAttention attn{nullptr};
  GptMlp mlp{nullptr};
};
TORCH_MODULE(GptBlock);

// idx [B, T] int64 (T <= block_size) -> logits [B, T, vocab_size]:
//   x = dropout(wte(idx) + wpe(0..T-1)); x = h.0(x) ... h.{n_layer-1}(x);
//   logits = ln_f(x) @ wte.weight^T
// Parameter names are nanoGPT's: transformer.wte, transformer.wpe,
// transformer.h.N.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj},
// transformer.ln_f. lm_head is tied to transformer.wte: its weight is
// transformer.wte.weight, listed once by parameters() (as by Python's
// named_parameters()), so there is no "lm_head.weight" key; a nanoGPT
// state_dict loads by dropping that key (and any ".attn.bias" mask buffers).
// Parameters, with C = n_embd and LayerNorm/Linear biases counted when `bias`:
//   V*C + block_size*C + n_layer*(12*C^2 + 13*C) + 2*C   (bias)
//   V*C + block_size*C + n_layer*(12*C^2 + 2*C) + C      (no bias)
// which is 842,496 with the defaults.
// Initialisation as nanoGPT: Linear and Embedding weights normal(0, 0.02),
// the c_proj weights normal(0, 0.02 / sqrt(2 * n_layer)), biases 0,
// LayerNorm weight 1.
// Layers (LayerSequence; their names are its regions): embed (wte and wpe
// summed, dropout), h.0 .. h.{n_layer-1} (one block each), head (ln_f and the
// tied lm_head): wte is used by embed and head, so a pipeline that puts them
// on different stages holds it on both and sums its gradient across them.
// Throws c10::Error unless `idx` is int64 [B, T] with T <= block_size.
void check_tokens(const torch::Tensor& idx, int64_t block_size, const char* model);

// Gpt's layer "embed": `wte` (the token embedding, computed by the module
// `wte_module`: a plain or a vocab-parallel Embedding) plus wpe of the
// positions, then dropout; `model` names it in errors. Shared with the
// tensor-parallel ParallelGpt.
Layer gpt_embed_layer(std::shared_ptr<torch::nn::Module> wte_module, LayerFn wte, torch::nn::Embedding wpe,
                      const GptOptions& options, const char* model);

class GptImpl : public torch::nn::Module, public Layered {
 public:
  explicit GptImpl(const GptOptions& options = {});
  torch::Tensor forward(const torch::Tensor& idx);
  std::vector<Layer> layers() override;

  // Mean next-token cross entropy of logits [B, T, V] against targets [B, T]
  // (int64); targets of -1 are ignored, as in nanoGPT.
  static torch::Tensor loss(const torch::Tensor& logits, const torch::Tensor& targets);

  const GptOptions& options() const { return options_; }

  // The children of "transformer" (which has no forward of its own).
  torch::nn::Embedding wte{nullptr}, wpe{nullptr};
  torch::nn::ModuleList h{nullptr};  // of GptBlock
  GptLayerNorm ln_f{nullptr};

 private:
  GptOptions options_;
};
TORCH_MODULE(Gpt);

}  // namespace paisoar::models
