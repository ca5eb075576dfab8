// The C++ models against their PyTorch definitions: bench/amp_peer.py's
// (torchvision's ResNet-18, layer for layer) and torchvision's own ResNet-50
// and VGG-16 (with the same seed both sides build the same weights, so names,
// order and outputs must agree), and bench/gpt_peer.py's GPT, whose weights
// the C++ model loads by name. The Python is the project's venv
// (tests/support/python.h); a missing or failing peer fails the test.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include <nlohmann/json.hpp>

#include "paisoar/models.h"
#include "tests/support/python.h"

namespace {

using nlohmann::json;

// Runs `code` in the peer's Python with amp_peer importable; its stdout.
// Throws (failing the test) when Python, torch or torchvision is missing or fails.
std::string run_python(const std::string& code) {
  return paisoar::testing::run_python("-c 'import sys; sys.path.insert(0, \"" PAISOAR_SOURCE_BENCH_DIR "\")\n" +
                                      code + "'");
}

// Python side: the model `ctor` of `module` built after seed 0, its parameter
// and buffer names in order, and its eval-mode output for a seeded input of
// `shape`.
json describe_in_python(const std::string& module, const std::string& ctor, const std::string& shape) {
  std::string code = "import json, torch, MODULE as source\n"
                     "torch.manual_seed(0)\n"
                     "m = source.CTOR\n"
                     "x = torch.randn(SHAPE)\n"
                     "m.eval()\n"
                     "with torch.no_grad(): y = m(x)\n"
                     "print(json.dumps({\"params\": [k for k, _ in m.named_parameters()],\n"
                     "                  \"buffers\": [k for k, _ in m.named_buffers()],\n"
                     "                  \"out\": y.flatten().tolist()}))\n";
  code.replace(code.find("MODULE"), 6, module);
  code.replace(code.find("CTOR"), 4, ctor);
  code.replace(code.find("SHAPE"), 5, shape);
  return json::parse(run_python(code));
}

void expect_same_as_python(torch::nn::Module& model, torch::nn::AnyModule forward, const json& py,
                           std::vector<int64_t> shape) {
  std::vector<std::string> params, buffers;
  for (const auto& p : model.named_parameters()) params.push_back(p.key());
  for (const auto& b : model.named_buffers()) buffers.push_back(b.key());
  EXPECT_EQ(params, py["params"].get<std::vector<std::string>>());
  EXPECT_EQ(buffers, py["buffers"].get<std::vector<std::string>>());
  auto x = torch::randn(shape);  // drawn after the model, as in Python
  model.eval();
  torch::NoGradGuard no_grad;
  auto y = forward.forward(x).flatten();
  auto expected = torch::tensor(py["out"].get<std::vector<float>>());
  // Same library, same kernels: differences are float rounding at most.
  EXPECT_TRUE(torch::allclose(y, expected, 1e-4, 1e-5))
      << "max |diff| " << (y - expected).abs().max().item<float>();
}

TEST(ModelsAgainstPyTorch, ResNet18) {
  json py = describe_in_python("amp_peer", "ResNet(num_classes=10)", "2, 3, 64, 64");
  torch::manual_seed(0);
  auto model = paisoar::models::resnet18(10);
  expect_same_as_python(*model, torch::nn::AnyModule(model), py, {2, 3, 64, 64});
}

TEST(ModelsAgainstPyTorch, FashionCnnBothVariants) {
  for (bool bn : {false, true}) {
    json py = describe_in_python("amp_peer", std::string("FashionCnn(batch_norm=") + (bn ? "True" : "False") + ")",
                                 "4, 1, 28, 28");
    torch::manual_seed(0);
    paisoar::models::FashionCnnOptions o;
    o.batch_norm = bn;
    paisoar::models::FashionCnn model(o);
    SCOPED_TRACE(bn ? "batch_norm" : "plain");
    expect_same_as_python(*model, torch::nn::AnyModule(model), py, {4, 1, 28, 28});
  }
}

TEST(ModelsAgainstPyTorch, ResNet50IsTorchvisions) {
  json py = describe_in_python("torchvision.models", "resnet50(num_classes=10)", "2, 3, 64, 64");
  torch::manual_seed(0);
  auto model = paisoar::models::resnet50(10);
  expect_same_as_python(*model, torch::nn::AnyModule(model), py, {2, 3, 64, 64});
}

TEST(ModelsAgainstPyTorch, Vgg16IsTorchvisions) {
  json py = describe_in_python("torchvision.models", "vgg16(num_classes=10)", "2, 3, 32, 32");
  torch::manual_seed(0);
  auto model = paisoar::models::vgg16(10);
  expect_same_as_python(*model, torch::nn::AnyModule(model), py, {2, 3, 32, 32});
}

// Python side, one run for all of `configs`: bench/gpt_peer.py's Gpt with
// each options and random weights (the init plus noise, so no weight is a
// plain 0 or 1), its named_parameters and state_dict keys, and its eval-mode
// logits and loss for seeded tokens [2, block_size]. A JSON list, in order.
json gpt_in_python(const std::vector<paisoar::models::GptOptions>& configs) {
  std::string args;
  for (const auto& o : configs) {
    args += '(';
    for (int64_t v : {o.vocab_size, o.block_size, o.n_layer, o.n_head, o.n_embd}) {
      args += std::to_string(v);
      args += ", ";
    }
    args += o.bias ? "True), " : "False), ";
  }
  std::string code =
      "import json, torch, gpt_peer\n"
      "out = []\n"
      "for v, t, l, h, c, bias in [ARGS]:\n"
      "    torch.manual_seed(0)\n"
      "    m = gpt_peer.Gpt(v, t, l, h, c, bias=bias)\n"
      "    m.eval()\n"
      "    with torch.no_grad():\n"
      "        for p in m.parameters(): p.add_(0.1 * torch.randn_like(p))\n"
      "        idx = torch.randint(v, (2, t))\n"
      "        targets = torch.randint(v, (2, t))\n"
      "        y = m(idx)\n"
      "    out.append({\"params\": {k: p.flatten().tolist() for k, p in m.named_parameters()},\n"
      "                \"names\": [k for k, _ in m.named_parameters()],\n"
      "                \"state_keys\": list(m.state_dict().keys()),\n"
      "                \"idx\": idx.flatten().tolist(), \"targets\": targets.flatten().tolist(),\n"
      "                \"out\": y.flatten().tolist(), \"loss\": gpt_peer.Gpt.loss(y, targets).item()})\n"
      "print(json.dumps(out))\n";
  code.replace(code.find("ARGS"), 4, args);
  return json::parse(run_python(code));
}

TEST(ModelsAgainstPyTorch, GptWithPythonsWeights) {
  paisoar::models::GptOptions with_bias;
  with_bias.vocab_size = 64;
  with_bias.block_size = 16;
  with_bias.n_layer = 2;
  with_bias.n_head = 4;
  with_bias.n_embd = 32;
  auto no_bias = with_bias;
  no_bias.bias = false;
  const std::vector<paisoar::models::GptOptions> configs = {with_bias, no_bias};
  json runs = gpt_in_python(configs);
  ASSERT_EQ(runs.size(), configs.size());
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto& o = configs[i];
    const json& py = runs[i];
    SCOPED_TRACE(o.bias ? "bias" : "no bias");
    paisoar::models::Gpt model(o);
    std::vector<std::string> names;
    for (const auto& p : model->named_parameters()) names.push_back(p.key());
    EXPECT_EQ(names, py["names"].get<std::vector<std::string>>());
    // Python's state_dict also lists the tied head; nothing else differs.
    auto state_keys = py["state_keys"].get<std::vector<std::string>>();
    EXPECT_EQ(state_keys.back(), "lm_head.weight");
    state_keys.pop_back();
    EXPECT_EQ(names, state_keys);

    torch::NoGradGuard no_grad;
    for (auto& p : model->named_parameters()) {
      auto value = torch::tensor(py["params"][p.key()].get<std::vector<float>>());
      ASSERT_EQ(value.numel(), p.value().numel()) << p.key();
      p.value().copy_(value.view_as(p.value()));
    }
    model->eval();
    const int64_t T = o.block_size;
    auto idx = torch::tensor(py["idx"].get<std::vector<int64_t>>()).view({2, T});
    auto targets = torch::tensor(py["targets"].get<std::vector<int64_t>>()).view({2, T});
    auto logits = model->forward(idx);
    auto expected = torch::tensor(py["out"].get<std::vector<float>>()).view({2, T, o.vocab_size});
    EXPECT_TRUE(torch::allclose(logits, expected, 0.0, 1e-4))
        << "max |diff| " << (logits - expected).abs().max().item<float>();
    EXPECT_NEAR(paisoar::models::GptImpl::loss(logits, targets).item<double>(), py["loss"].get<double>(), 1e-5);
  }
}

}  // namespace
