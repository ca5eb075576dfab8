// models::Gpt: parameter count against the documented formula (with and
// without biases), nanoGPT's names, the tied head, output shapes, the causal
// mask, nanoGPT's init, the loss at init and the option and input checks.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <map>
#include <string>

#include "paisoar/models/gpt.h"
#include "tests/models/module_stats.h"

using paisoar::models::Gpt;
using paisoar::models::GptImpl;
using paisoar::models::GptOptions;
using paisoar::models::testing::count_parameters;
using paisoar::models::testing::parameter_names;
using paisoar::models::testing::state_dict;

namespace {

// The formula in gpt.h, term by term: embeddings, per block two LayerNorms,
// c_attn, attn.c_proj, c_fc and mlp.c_proj, then ln_f.
int64_t gpt_parameters(const GptOptions& o) {
  const int64_t C = o.n_embd, b = o.bias ? 1 : 0;
  const int64_t block = 2 * (C + b * C) + (C * 3 * C + b * 3 * C) + (C * C + b * C) + (C * 4 * C + b * 4 * C) +
                        (4 * C * C + b * C);
  return o.vocab_size * C + o.block_size * C + o.n_layer * block + (C + b * C);
}

GptOptions small() {
  GptOptions o;
  o.vocab_size = 64;
  o.block_size = 16;
  o.n_layer = 2;
  o.n_head = 2;
  o.n_embd = 32;
  return o;
}

TEST(Gpt, ParameterCountFollowsTheFormula) {
  Gpt model;
  EXPECT_EQ(count_parameters(*model), 842496);  // python3 bench/gpt_peer.py
  EXPECT_EQ(count_parameters(*model), gpt_parameters(GptOptions{}));
  GptOptions no_bias;
  no_bias.bias = false;
  EXPECT_EQ(count_parameters(*Gpt(no_bias)), 836736);  // python3 bench/gpt_peer.py --no_bias
  EXPECT_EQ(count_parameters(*Gpt(no_bias)), gpt_parameters(no_bias));
  GptOptions wide = small();
  wide.n_layer = 3;
  wide.n_embd = 48;
  wide.n_head = 6;
  EXPECT_EQ(count_parameters(*Gpt(wide)), gpt_parameters(wide));
}

TEST(Gpt, NamesAreNanoGpts) {
  Gpt model(small());
  auto names = parameter_names(*model);
  std::vector<std::string> expected = {"transformer.wte.weight", "transformer.wpe.weight"};
  for (const char* layer : {"0", "1"}) {
    for (const char* p : {"ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
                          "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
                          "mlp.c_proj.weight", "mlp.c_proj.bias"}) {
      expected.push_back(std::string("transformer.h.") + layer + "." + p);
    }
  }
  expected.push_back("transformer.ln_f.weight");
  expected.push_back("transformer.ln_f.bias");
  EXPECT_EQ(names, expected);
  EXPECT_TRUE(model->named_buffers().is_empty());  // no mask buffer
  auto sd = state_dict(*model);
  EXPECT_EQ(sd["transformer.h.1.attn.c_attn.weight"].sizes().vec(), (std::vector<int64_t>{96, 32}));
  EXPECT_EQ(sd["transformer.h.0.mlp.c_fc.weight"].sizes().vec(), (std::vector<int64_t>{128, 32}));
  EXPECT_EQ(sd["transformer.wpe.weight"].sizes().vec(), (std::vector<int64_t>{16, 32}));

  GptOptions no_bias = small();
  no_bias.bias = false;
  for (const auto& n : parameter_names(*Gpt(no_bias))) {
    EXPECT_EQ(n.find(".bias"), std::string::npos) << n;
  }
}

TEST(Gpt, LogitsShapeAndTiedHead) {
  Gpt model(small());
  auto idx = torch::randint(64, {3, 10}, torch::kLong);
  auto logits = model->forward(idx);
  EXPECT_EQ(logits.sizes().vec(), (std::vector<int64_t>{3, 10, 64}));
  EXPECT_EQ(model->forward(torch::randint(64, {1, 16}, torch::kLong)).sizes().vec(),
            (std::vector<int64_t>{1, 16, 64}));
  // The head's gradient lands on the token embedding, beside the lookup's.
  GptImpl::loss(logits, torch::randint(64, {3, 10}, torch::kLong)).backward();
  auto grad = model->wte->weight.grad();
  ASSERT_TRUE(grad.defined());
  EXPECT_GT(grad.abs().min().item<float>(), 0.0f);  // every row: the head reads all of them
}

TEST(Gpt, RejectsLongSequencesAndBadInputs) {
  Gpt model(small());
  try {
    model->forward(torch::zeros({1, 17}, torch::kLong));
    FAIL() << "T = 17 > block_size = 16 must throw";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("block_size is 16"), std::string::npos) << e.what();
  }
  EXPECT_THROW(model->forward(torch::zeros({1, 4}, torch::kInt)), c10::Error);
  EXPECT_THROW(model->forward(torch::zeros({4}, torch::kLong)), c10::Error);
  EXPECT_THROW(GptImpl::loss(torch::zeros({1, 4, 64}), torch::zeros({1, 5}, torch::kLong)), c10::Error);
  GptOptions bad = small();
  bad.n_head = 3;  // does not divide 32
  EXPECT_THROW(Gpt{bad}, c10::ValueError);
  bad = small();
  bad.n_layer = 0;
  EXPECT_THROW(Gpt{bad}, c10::ValueError);
}

TEST(Gpt, CausalMaskHidesTheFuture) {
  Gpt model(small());
  model->eval();
  torch::NoGradGuard no_grad;
  auto idx = torch::randint(64, {2, 16}, torch::kLong);
  auto changed = idx.clone();
  changed.index_put_({torch::indexing::Slice(), 10}, (idx.index({torch::indexing::Slice(), 10}) + 1) % 64);
  auto a = model->forward(idx), b = model->forward(changed);
  using torch::indexing::Slice;
  EXPECT_TRUE(torch::allclose(a.index({Slice(), Slice(0, 10)}), b.index({Slice(), Slice(0, 10)}), 0.0, 1e-6))
      << "positions before 10 saw token 10";
  // The changed token and everything after it see the change.
  for (int64_t t = 10; t < 16; ++t) {
    EXPECT_GT((a.index({Slice(), t}) - b.index({Slice(), t})).abs().max().item<float>(), 1e-4) << t;
  }
}

TEST(Gpt, InitialisationIsNanoGpts) {
  torch::manual_seed(0);
  GptOptions o;  // 4 layers of 128: enough weights for the statistics
  Gpt model(o);
  auto sd = state_dict(*model);
  const double proj = 0.02 / std::sqrt(2.0 * 4);
  for (const auto& [key, expected] : std::map<std::string, double>{{"transformer.wte.weight", 0.02},
                                                                   {"transformer.wpe.weight", 0.02},
                                                                   {"transformer.h.0.attn.c_attn.weight", 0.02},
                                                                   {"transformer.h.3.mlp.c_fc.weight", 0.02},
                                                                   {"transformer.h.1.attn.c_proj.weight", proj},
                                                                   {"transformer.h.2.mlp.c_proj.weight", proj}}) {
    EXPECT_NEAR(sd[key].std().item<double>(), expected, 0.05 * expected) << key;
  }
  EXPECT_TRUE(torch::equal(sd["transformer.h.0.attn.c_attn.bias"], torch::zeros({384})));
  EXPECT_TRUE(torch::equal(sd["transformer.h.0.mlp.c_proj.bias"], torch::zeros({128})));
  EXPECT_TRUE(torch::equal(sd["transformer.ln_f.weight"], torch::ones({128})));
  EXPECT_TRUE(torch::equal(sd["transformer.h.2.ln_1.bias"], torch::zeros({128})));
  // Small weights give near-uniform predictions: the loss starts near ln(V).
  torch::NoGradGuard no_grad;
  auto idx = torch::randint(256, {4, 32}, torch::kLong);
  double loss = GptImpl::loss(model->forward(idx), torch::randint(256, {4, 32}, torch::kLong)).item<double>();
  EXPECT_NEAR(loss, std::log(256.0), 0.1);
  // Targets of -1 are ignored, as in nanoGPT.
  auto logits = model->forward(idx);
  auto targets = torch::randint(256, {4, 32}, torch::kLong);
  auto masked = targets.clone();
  masked.index_put_({torch::indexing::Slice(), torch::indexing::Slice(16, 32)}, -1);
  using torch::indexing::Slice;
  auto first_half = GptImpl::loss(logits.index({Slice(), Slice(0, 16)}).contiguous(),
                                  targets.index({Slice(), Slice(0, 16)}).contiguous());
  EXPECT_NEAR(GptImpl::loss(logits, masked).item<double>(), first_half.item<double>(), 1e-6);
}

TEST(Gpt, DropoutOnlyWhileTraining) {
  GptOptions o = small();
  o.dropout = 0.2;
  Gpt model(o);
  auto idx = torch::randint(64, {2, 8}, torch::kLong);
  torch::NoGradGuard no_grad;
  model->eval();
  EXPECT_TRUE(torch::equal(model->forward(idx), model->forward(idx)));
  model->train();
  EXPECT_FALSE(torch::equal(model->forward(idx), model->forward(idx)));
}

}  // namespace
