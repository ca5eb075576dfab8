// profile_layers on a small Sequential: one cost per layer named after it,
// times positive, memory at least the weights and gradients (exactly 2 x the
// parameter bytes plus the activations), a layer that fails named in the
// error, and the model's gradients and BatchNorm statistics left untouched.
// The profiled costs feed the partitioner.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "paisoar/pipeline/layer_cost.h"
#include "paisoar/pipeline/partition.h"
#include "tests/support/expect_error.h"

using namespace paisoar::pipeline;
using paisoar::testing::expect_error;

TEST(PipelineProfile, GivesEveryLayerATimeAndItsMemory) {
  namespace nn = torch::nn;
  nn::Sequential model(nn::Linear(32, 64), nn::BatchNorm1d(64), nn::Functional(torch::relu), nn::Linear(64, 8));
  const auto running_mean = model[1]->buffers()[0].clone();
  ProfileOptions options;
  options.repeats = 2;
  const auto costs = profile_layers(model, torch::randn({16, 32}), options);
  ASSERT_EQ(costs.size(), 4u);
  EXPECT_EQ(costs[0].name, "0:Linear");
  EXPECT_EQ(costs[1].name, "1:BatchNorm1d");
  const int64_t linear0_params = (32 * 64 + 64) * 4;
  for (size_t i = 0; i < costs.size(); ++i) {
    EXPECT_GT(costs[i].time_s, 0) << i;
    EXPECT_GT(costs[i].memory_bytes, 0) << i;
  }
  // Weights + gradients + at least the [16, 64] fp32 output.
  EXPECT_GE(costs[0].memory_bytes, 2 * linear0_params + 16 * 64 * 4);
  for (const auto& p : model->parameters()) EXPECT_FALSE(p.grad().defined());
  EXPECT_TRUE(torch::equal(model[1]->buffers()[0], running_mean));
  EXPECT_EQ(partition_layers(costs, 2).stages.size(), 2u);
}

TEST(PipelineProfile, ActivationCopiesScaleTheActivationPart) {
  namespace nn = torch::nn;
  nn::Sequential model(nn::Linear(16, 16));
  ProfileOptions one, four;
  four.activation_copies = 4;
  const torch::Tensor sample = torch::randn({64, 16});
  const int64_t params = 2 * (16 * 16 + 16) * 4;
  const int64_t act1 = profile_layers(model, sample, one)[0].memory_bytes - params;
  const int64_t act4 = profile_layers(model, sample, four)[0].memory_bytes - params;
  EXPECT_GT(act1, 0);
  EXPECT_EQ(act4, 4 * act1);
}

TEST(PipelineProfile, NamesTheLayerThatFails) {
  namespace nn = torch::nn;
  nn::Sequential model(nn::Linear(8, 16), nn::Linear(32, 4));
  expect_error([&] { profile_layers(model, torch::randn({2, 8})); }, {"layer 1 (1:Linear)", "[2, 16]"});
}
