// amp::autocast: what ops produce inside and outside the guard, nesting,
// disabled regions, restoring the previous state, and bad dtypes.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

#include "paisoar/amp/autocast.h"

using paisoar::amp::autocast;
using paisoar::amp::AutocastOptions;
using paisoar::amp::is_autocast_enabled;

namespace {

torch::Dtype matmul_dtype() {
  auto a = torch::randn({4, 4});
  return torch::mm(a, a).scalar_type();
}

TEST(Autocast, LinearLayersRunInBf16InsideTheGuardOnly) {
  EXPECT_EQ(matmul_dtype(), torch::kFloat);
  {
    autocast guard;
    EXPECT_TRUE(is_autocast_enabled());
    EXPECT_EQ(matmul_dtype(), torch::kBFloat16);
    // Ops autocast keeps in fp32 stay fp32 (softmax is on CPU autocast's fp32 list).
    EXPECT_EQ(torch::log_softmax(torch::randn({3, 3}), 1).scalar_type(), torch::kFloat);
  }
  EXPECT_FALSE(is_autocast_enabled());
  EXPECT_EQ(matmul_dtype(), torch::kFloat);
}

TEST(Autocast, NestedAndDisabledRegionsRestoreTheOuterState) {
  autocast outer;
  {
    AutocastOptions off;
    off.enabled = false;
    autocast fp32_region(off);
    EXPECT_EQ(matmul_dtype(), torch::kFloat);
    {
      autocast inner;
      EXPECT_EQ(matmul_dtype(), torch::kBFloat16);
    }
    EXPECT_EQ(matmul_dtype(), torch::kFloat);
  }
  EXPECT_EQ(matmul_dtype(), torch::kBFloat16);
}

TEST(Autocast, MatchesAnExplicitBf16Computation) {
  torch::manual_seed(0);
  torch::nn::Linear layer(16, 8);
  auto x = torch::randn({5, 16});
  torch::Tensor got;
  {
    autocast guard;
    got = layer(x);
  }
  auto want = torch::nn::functional::linear(x.to(torch::kBFloat16),
                                           layer->weight.to(torch::kBFloat16),
                                           layer->bias.to(torch::kBFloat16));
  EXPECT_TRUE(torch::equal(got, want));
}

TEST(Autocast, StateIsPerThread) {
  autocast guard;
  bool other_thread_enabled = true;
  std::thread([&] { other_thread_enabled = is_autocast_enabled(); }).join();
  EXPECT_FALSE(other_thread_enabled);
}

TEST(Autocast, UnsupportedDtypeIsAClearError) {
  AutocastOptions fp64_on_cpu;
  fp64_on_cpu.dtype = torch::kDouble;
  try {
    autocast guard(fp64_on_cpu);
    ADD_FAILURE() << "fp64 CPU autocast was accepted";
  } catch (const c10::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("use float16 or bfloat16"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(is_autocast_enabled());
}

// LibTorch 2.x's CPU autocast takes fp16 as well as bf16.
TEST(Autocast, Fp16OnTheCpu) {
  AutocastOptions fp16_on_cpu;
  fp16_on_cpu.dtype = torch::kHalf;
  auto linear = torch::nn::Linear(4, 3);
  auto x = torch::randn({2, 4});
  {
    autocast guard(fp16_on_cpu);
    EXPECT_TRUE(is_autocast_enabled());
    EXPECT_EQ(paisoar::amp::autocast_dtype(), torch::kHalf);
    EXPECT_EQ(linear(x).scalar_type(), torch::kHalf);
  }
  EXPECT_FALSE(is_autocast_enabled());
  EXPECT_EQ(linear(x).scalar_type(), torch::kFloat);
}

}  // namespace
