// models::Gpt: the transformer's layers (LayerNorm with optional bias, causal
// self-attention, MLP, block), the network, nanoGPT's initialisation and the
// next-token loss.
#include "paisoar/models/gpt.h"

#include <c10/util/Exception.h>

#include <torch/nn/functional/loss.h>
#include <torch/nn/functional/normalization.h>
#include <torch/nn/init.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace paisoar::models {
namespace {

namespace F = torch::nn::functional;

torch::nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

void check(const GptOptions& o) {
  auto fail = [](const std::string& what) { C10_THROW_ERROR(ValueError, "Gpt: " + what); };
  if (o.vocab_size < 1 || o.block_size < 1 || o.n_layer < 1 || o.n_head < 1 || o.n_embd < 1) {
    fail("vocab_size, block_size, n_layer, n_head and n_embd must all be at least 1");
  }
  if (o.n_embd % o.n_head != 0) {
    fail("n_embd (" + std::to_string(o.n_embd) + ") must be a multiple of n_head (" + std::to_string(o.n_head) + ")");
  }
  if (o.dropout < 0.0 || o.dropout >= 1.0) fail("dropout is " + std::to_string(o.dropout) + "; give a value in [0, 1)");
}

}  // namespace

GptLayerNormImpl::GptLayerNormImpl(int64_t n, bool with_bias) {
  weight = register_parameter("weight", torch::ones({n}));
  if (with_bias) bias = register_parameter("bias", torch::zeros({n}));
}

torch::Tensor GptLayerNormImpl::forward(const torch::Tensor& x) {
  return torch::layer_norm(x, {weight.size(0)}, weight, bias, 1e-5);
}

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const GptOptions& options)
    : n_head_(options.n_head), dropout_(options.dropout) {
  c_attn = register_module("c_attn", linear(options.n_embd, 3 * options.n_embd, options.bias));
  c_proj = register_module("c_proj", linear(options.n_embd, options.n_embd, options.bias));
}

torch::Tensor causal_attention(const torch::Tensor& qkv, int64_t heads, double dropout, bool training) {
  const int64_t B = qkv.size(0), T = qkv.size(1), width = qkv.size(2) / 3, hs = width / heads;
  auto parts = qkv.split(width, /*dim=*/2);
  // [B, T, width] -> [B, heads, T, hs]
  auto split_heads = [&](const torch::Tensor& t) { return t.view({B, T, heads, hs}).transpose(1, 2); };
  auto q = split_heads(parts[0]), k = split_heads(parts[1]), v = split_heads(parts[2]);
  auto att = torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hs)));
  auto future = torch::ones({T, T}, qkv.options().dtype(torch::kBool)).triu(1);
  att = torch::softmax(att.masked_fill(future, -std::numeric_limits<double>::infinity()), -1);
  att = torch::dropout(att, dropout, training);
  return torch::matmul(att, v).transpose(1, 2).contiguous().view({B, T, width});
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  auto y = causal_attention(c_attn(x), n_head_, dropout_, is_training());
  return torch::dropout(c_proj(y), dropout_, is_training());
}

GptMlpImpl::GptMlpImpl(const GptOptions& options) : dropout_(options.dropout) {
  c_fc = register_module("c_fc", linear(options.n_embd, 4 * options.n_embd, options.bias));
  c_proj = register_module("c_proj", linear(4 * options.n_embd, options.n_embd, options.bias));
}

torch::Tensor GptMlpImpl::forward(const torch::Tensor& x) {
  return torch::dropout(c_proj(torch::gelu(c_fc(x))), dropout_, is_training());
}

GptBlockImpl::GptBlockImpl(const GptOptions& options) {
  ln_1 = register_module("ln_1", GptLayerNorm(options.n_embd, options.bias));
  attn = register_module("attn", CausalSelfAttention(options));
  ln_2 = register_module("ln_2", GptLayerNorm(options.n_embd, options.bias));
  mlp = register_module("mlp", GptMlp(options));
}

torch::Tensor GptBlockImpl::forward(torch::Tensor x) {
  x = x + attn(ln_1(x));
  return x + mlp(ln_2(x));
}

GptImpl::GptImpl(const GptOptions& options) : options_(options) {
  check(options);
  auto transformer = register_module("transformer", std::make_shared<torch::nn::Module>("Transformer"));
  wte = transformer->register_module("wte", torch::nn::Embedding(options.vocab_size, options.n_embd));
  wpe = transformer->register_module("wpe", torch::nn::Embedding(options.block_size, options.n_embd));
  h = transformer->register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.n_layer; ++i) h->push_back(GptBlock(options));
  ln_f = transformer->register_module("ln_f", GptLayerNorm(options.n_embd, options.bias));

  torch::NoGradGuard no_grad;
  const double proj_std = 0.02 / std::sqrt(2.0 * static_cast<double>(options.n_layer));
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* fc = m->as<torch::nn::Linear>()) {
      torch::nn::init::normal_(fc->weight, 0.0, 0.02);
      if (fc->bias.defined()) torch::nn::init::zeros_(fc->bias);
    } else if (auto* emb = m->as<torch::nn::Embedding>()) {
      torch::nn::init::normal_(emb->weight, 0.0, 0.02);
    }
  }
  for (auto& p : named_parameters()) {
    const std::string suffix = "c_proj.weight";
    const std::string& key = p.key();
    if (key.size() >= suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0) {
      torch::nn::init::normal_(p.value(), 0.0, proj_std);
    }
  }
}

torch::Tensor GptImpl::forward(const torch::Tensor& idx) {
  return run_layers(layers(), idx);
}

std::vector<Layer> GptImpl::layers() {
  std::vector<Layer> out;
  out.push_back(gpt_embed_layer(wte.ptr(), [e = wte.ptr()](const torch::Tensor& idx) { return e->forward(idx); },
                                wpe, options_, "Gpt"));
  for (size_t i = 0; i < h->size(); ++i) {
    auto block = h->ptr<GptBlockImpl>(i);
    out.push_back({"h." + std::to_string(i), {{"transformer.h." + std::to_string(i), block}},
                   [block](const torch::Tensor& x) { return block->forward(x); }});
  }
  out.push_back({"head", {{"transformer.ln_f", ln_f.ptr()}, {"transformer.wte", wte.ptr()}},
                 [ln_f = ln_f, wte = wte](const torch::Tensor& x) mutable {
                   return torch::nn::functional::linear(ln_f(x), wte->weight);  // lm_head, tied to wte
                 }});
  return out;
}

Layer gpt_embed_layer(std::shared_ptr<torch::nn::Module> wte_module, LayerFn wte, torch::nn::Embedding wpe,
                      const GptOptions& options, const char* model) {
  return {"embed", {{"transformer.wte", wte_module}, {"transformer.wpe", wpe.ptr()}},
          [wte = std::move(wte), wpe, o = options, model](const torch::Tensor& idx) mutable {
            check_tokens(idx, o.block_size, model);
            auto pos = torch::arange(idx.size(1), idx.options());
            return torch::dropout(wte(idx) + wpe(pos), o.dropout, wpe->is_training());
          }};
}

void check_tokens(const torch::Tensor& idx, int64_t block_size, const char* model) {
  TORCH_CHECK(idx.dim() == 2 && idx.scalar_type() == torch::kLong, model, " takes token ids [B, T] as int64, got ",
              idx.sizes(), " of ", idx.scalar_type());
  TORCH_CHECK(idx.size(1) <= block_size, model, ": the sequence has ", idx.size(1), " tokens but block_size is ",
              block_size, "; crop the input to its last ", block_size,
              " tokens or build the model with a larger GptOptions::block_size");
}

torch::Tensor GptImpl::loss(const torch::Tensor& logits, const torch::Tensor& targets) {
  TORCH_CHECK(logits.dim() == 3 && targets.sizes() == logits.sizes().slice(0, 2),
              "Gpt::loss takes logits [B, T, V] and targets [B, T], got ", logits.sizes(), " and ",
              targets.sizes());
  return F::cross_entropy(logits.reshape({-1, logits.size(2)}), targets.reshape({-1}),
                          F::CrossEntropyFuncOptions().ignore_index(-1));
}

}  // namespace paisoar::models
