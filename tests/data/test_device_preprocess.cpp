// DevicePreprocess on the CPU against the formula (x / 255 - mean) / std and
// the flip decisions it reports.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "paisoar/data/device_preprocess.h"

using namespace paisoar::data;

TEST(DevicePreprocess, NormalisesAndFlipsLikeTheFormula) {
  torch::manual_seed(0);
  Batch batch;
  batch.data = torch::randint(0, 256, {16, 3, 5, 7}, torch::kUInt8);
  batch.indices = torch::arange(100, 116, torch::kLong);
  batch.epoch = 3;
  DevicePreprocessOptions o;
  o.mean = {0.485f, 0.456f, 0.406f};
  o.std = {0.229f, 0.224f, 0.225f};
  o.horizontal_flip = 0.5;
  o.seed = 9;
  DevicePreprocess pre(o);
  const auto out = pre(batch);
  const auto mean = torch::tensor(o.mean).view({1, 3, 1, 1});
  const auto std = torch::tensor(o.std).view({1, 3, 1, 1});
  auto expected = (batch.data.to(torch::kFloat) / 255.0 - mean) / std;
  int flipped = 0;
  for (int64_t i = 0; i < 16; ++i) {
    if (pre.flips(3, 100 + i)) {
      expected[i] = expected[i].flip({2});
      ++flipped;
    }
  }
  EXPECT_GT(flipped, 0);
  EXPECT_LT(flipped, 16);
  EXPECT_TRUE(torch::allclose(out, expected, 1e-5, 1e-5));
  EXPECT_EQ(pre.flips(3, 101), DevicePreprocess(o).flips(3, 101));
  batch.data = batch.data.to(torch::kFloat);
  EXPECT_THROW(pre(batch), c10::ValueError);
}
