// Precision pins: globs, the YAML policy, PrecisionScope, the transparent
// Pinned wrapper, and a Sequential rewritten by policy, each checked against
// the same computation done by hand in the pinned dtype.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "paisoar/amp/autocast.h"
#include "paisoar/amp/precision.h"

using namespace paisoar::amp;

namespace {

// An op CPU autocast does not know: without a pin it runs in its input's dtype.
struct CubeImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) { return x * x * x; }
};
TORCH_MODULE(Cube);

std::vector<std::string> keys(const torch::nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& p : m.named_parameters()) out.push_back(p.key());
  for (const auto& b : m.named_buffers()) out.push_back(b.key());
  return out;
}

TEST(Precision, GlobsMatchDottedModulePaths) {
  EXPECT_TRUE(glob_match("head", "head"));
  EXPECT_FALSE(glob_match("head", "head.fc"));
  EXPECT_TRUE(glob_match("*.norm", "blocks.3.norm"));
  EXPECT_FALSE(glob_match("*.norm", "norm"));
  EXPECT_TRUE(glob_match("blocks.?.mlp", "blocks.7.mlp"));
  EXPECT_FALSE(glob_match("blocks.?.mlp", "blocks.12.mlp"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("a*b*c", "a.x.b.y.c"));
  EXPECT_FALSE(glob_match("a*b*c", "a.x.c.y.b"));
}

TEST(Precision, PolicyFromYamlFirstRuleWins) {
  auto policy = PrecisionPolicy::from_yaml("fp32: [head, \"*.norm\"]\nlow: \"blocks.*\"\n");
  EXPECT_EQ(policy.precision_for("head"), Precision::Full);
  EXPECT_EQ(policy.precision_for("blocks.1.norm"), Precision::Full);  // fp32 rules come first
  EXPECT_EQ(policy.precision_for("blocks.1.mlp"), Precision::Low);
  EXPECT_EQ(policy.precision_for("stem"), Precision::Inherit);
  EXPECT_TRUE(PrecisionPolicy::from_yaml("").empty());
}

TEST(Precision, BadPolicyNamesWhatIsWrong) {
  auto message = [](const std::string& yaml) {
    try {
      PrecisionPolicy::from_yaml(yaml);
    } catch (const c10::ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("fp64: [head]").find("unknown precision 'fp64'"), std::string::npos);
  EXPECT_NE(message("[head]").find("expected a mapping"), std::string::npos);
  EXPECT_NE(message("fp32: {a: b}").find("'fp32' must be a pattern"), std::string::npos);
  EXPECT_NE(message("fp32: [head").find("not valid YAML"), std::string::npos);
}

TEST(Precision, ScopeFullRunsFp32InsideAutocastAndCastsInputs) {
  auto a = torch::randn({4, 4});
  autocast guard;
  {
    PrecisionScope full(Precision::Full);
    auto x = full.cast(a.to(torch::kBFloat16));
    EXPECT_EQ(x.scalar_type(), torch::kFloat);
    EXPECT_EQ(torch::mm(x, x).scalar_type(), torch::kFloat);
    EXPECT_EQ(full.cast(torch::ones({2}, torch::kLong)).scalar_type(), torch::kLong);
  }
  EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kBFloat16);  // restored
}

TEST(Precision, ScopeLowRunsUnlistedOpsInBf16EvenOutsideAutocast) {
  torch::manual_seed(0);
  auto x = torch::randn({8});
  Cube cube;
  PrecisionScope low(Precision::Low);
  EXPECT_TRUE(is_autocast_enabled());
  auto y = cube(low.cast(x));
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  auto xb = x.to(torch::kBFloat16);
  EXPECT_TRUE(torch::equal(y, xb * xb * xb));
}

TEST(Precision, PinnedIsTransparentAndRunsAtItsPrecision) {
  torch::manual_seed(0);
  torch::nn::Linear linear(6, 3);
  Pinned pinned(torch::nn::AnyModule(linear), Precision::Full);
  EXPECT_EQ(keys(*pinned), keys(*linear));
  EXPECT_EQ(pinned->parameters()[0].data_ptr(), linear->weight.data_ptr());

  auto x = torch::randn({5, 6});
  torch::Tensor y;
  {
    autocast guard;
    y = pinned(x.to(torch::kBFloat16));
  }
  EXPECT_EQ(y.scalar_type(), torch::kFloat);
  // Exactly the fp32 layer on the (bf16-rounded) input.
  EXPECT_TRUE(torch::equal(y, linear(x.to(torch::kBFloat16).to(torch::kFloat))));
  y.sum().backward();
  ASSERT_TRUE(linear->weight.grad().defined());
  EXPECT_EQ(linear->weight.grad().scalar_type(), torch::kFloat);
}

TEST(Precision, PinnedPropagatesTrainEvalAndDtypeMoves) {
  torch::nn::BatchNorm1d bn(4);
  Pinned pinned(torch::nn::AnyModule(bn), Precision::Full);
  pinned->eval();
  EXPECT_FALSE(bn->is_training());
  pinned->train();
  EXPECT_TRUE(bn->is_training());
  pinned->to(torch::kDouble);
  EXPECT_EQ(bn->weight.scalar_type(), torch::kDouble);
  EXPECT_EQ(bn->running_mean.scalar_type(), torch::kDouble);
}

TEST(Precision, PolicyRewritesASequentialKeepingItsKeys) {
  torch::manual_seed(0);
  torch::nn::Linear l0(4, 8), l1(8, 8), l3(8, 2);
  torch::nn::Sequential model(l0, l1, Cube(), l3);
  PrecisionPolicy policy;
  policy.add("body.2", Precision::Low).add("body.3", Precision::Full);
  auto pinned = policy.apply(model, "body");
  EXPECT_EQ(keys(*pinned), keys(*model));
  EXPECT_FALSE(std::dynamic_pointer_cast<PinnedImpl>(pinned[1]));
  EXPECT_TRUE(std::dynamic_pointer_cast<PinnedImpl>(pinned[2]));
  EXPECT_TRUE(std::dynamic_pointer_cast<PinnedImpl>(pinned[3]));

  auto x = torch::randn({3, 4});
  auto y = pinned->forward(x);  // no autocast around: only the pins act
  auto h = l1(l0(x)).to(torch::kBFloat16);
  auto want = l3((h * h * h).to(torch::kFloat));
  EXPECT_EQ(y.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(y, want));
}

TEST(Precision, PolicyScopeForHandWrittenForward) {
  auto policy = PrecisionPolicy::from_yaml("fp32: [head]");
  auto a = torch::randn({4, 4});
  autocast guard;
  {
    auto pin = policy.scope("head");
    EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kFloat);
  }
  {
    auto pin = policy.scope("body");  // no rule: inherits autocast
    EXPECT_EQ(torch::mm(a, a).scalar_type(), torch::kBFloat16);
  }
}

}  // namespace
