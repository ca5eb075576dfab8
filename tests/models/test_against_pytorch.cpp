// The C++ models against their PyTorch definitions in bench/amp_peer.py
// (torchvision's ResNet, layer for layer): with the same seed both build the
// same weights, so names, order and outputs must agree. Skipped when no Python
// with torch is found ($PAISOAR_PYTHON, else /usr/bin/python3).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "paisoar/models.h"

namespace {

using nlohmann::json;

// Runs `code` in the peer's Python with amp_peer importable; its stdout, or
// nullopt when Python or torch is missing.
std::optional<std::string> run_python(const std::string& code) {
  const char* env = std::getenv("PAISOAR_PYTHON");
  std::string python = env != nullptr && *env != '\0' ? env : "/usr/bin/python3";
  std::string cmd = python + " -c 'import sys; sys.path.insert(0, \"" PAISOAR_SOURCE_BENCH_DIR "\")\n" +
                    code + "' 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return std::nullopt;
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe.get())) out.append(buf, n);
  if (pclose(pipe.release()) != 0) return std::nullopt;
  return out;
}

// Python side: the model `ctor` built after seed 0, its parameter and buffer
// names in order, and its eval-mode output for a seeded input of `shape`.
json describe_in_python(const std::string& ctor, const std::string& shape) {
  std::string code = "import json, torch, amp_peer\n"
                     "torch.manual_seed(0)\n"
                     "m = amp_peer.CTOR\n"
                     "x = torch.randn(SHAPE)\n"
                     "m.eval()\n"
                     "with torch.no_grad(): y = m(x)\n"
                     "print(json.dumps({\"params\": [k for k, _ in m.named_parameters()],\n"
                     "                  \"buffers\": [k for k, _ in m.named_buffers()],\n"
                     "                  \"out\": y.flatten().tolist()}))\n";
  code.replace(code.find("CTOR"), 4, ctor);
  code.replace(code.find("SHAPE"), 5, shape);
  auto out = run_python(code);
  return out ? json::parse(*out) : json();
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
  json py = describe_in_python("ResNet(num_classes=10)", "2, 3, 64, 64");
  if (py.is_null()) GTEST_SKIP() << "no Python with torch: set PAISOAR_PYTHON";
  torch::manual_seed(0);
  auto model = paisoar::models::resnet18(10);
  expect_same_as_python(*model, torch::nn::AnyModule(model), py, {2, 3, 64, 64});
}

TEST(ModelsAgainstPyTorch, FashionCnnBothVariants) {
  for (bool bn : {false, true}) {
    json py = describe_in_python(std::string("FashionCnn(batch_norm=") + (bn ? "True" : "False") + ")",
                                 "4, 1, 28, 28");
    if (py.is_null()) GTEST_SKIP() << "no Python with torch: set PAISOAR_PYTHON";
    torch::manual_seed(0);
    paisoar::models::FashionCnnOptions o;
    o.batch_norm = bn;
    paisoar::models::FashionCnn model(o);
    SCOPED_TRACE(bn ? "batch_norm" : "plain");
    expect_same_as_python(*model, torch::nn::AnyModule(model), py, {4, 1, 28, 28});
  }
}

}  // namespace
