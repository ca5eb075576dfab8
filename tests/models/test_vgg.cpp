// models::Vgg: VGG-16 and VGG-16-BN have torchvision's parameter counts,
// state_dict keys and shapes and torchvision's init; output shapes; the input
// and option checks. Each 138M-parameter model is built once per test.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <map>

#include "paisoar/models/vgg.h"
#include "tests/models/module_stats.h"

using paisoar::models::kVggPool;
using paisoar::models::Vgg;
using paisoar::models::vgg16;
using paisoar::models::VggOptions;
using paisoar::models::testing::count_parameters;
using paisoar::models::testing::parameter_names;
using paisoar::models::testing::state_dict;

namespace {

TEST(Vgg16, MatchesTorchvisionAndInitialisesAsIt) {
  torch::manual_seed(0);
  auto model = vgg16();
  EXPECT_EQ(count_parameters(*model), 138357544);  // torchvision.models.vgg16()
  auto names = parameter_names(*model);
  ASSERT_EQ(names.size(), 32u);
  EXPECT_TRUE(model->named_buffers().is_empty());
  std::vector<std::string> weights;
  for (const auto& n : names) {
    if (n.size() > 7 && n.compare(n.size() - 7, 7, ".weight") == 0) weights.push_back(n);
  }
  // torchvision's indices: ReLUs and pools count as children of features.
  EXPECT_EQ(weights, (std::vector<std::string>{
                         "features.0.weight", "features.2.weight", "features.5.weight", "features.7.weight",
                         "features.10.weight", "features.12.weight", "features.14.weight", "features.17.weight",
                         "features.19.weight", "features.21.weight", "features.24.weight", "features.26.weight",
                         "features.28.weight", "classifier.0.weight", "classifier.3.weight", "classifier.6.weight"}));
  auto sd = state_dict(*model);
  EXPECT_EQ(sd["features.0.weight"].sizes().vec(), (std::vector<int64_t>{64, 3, 3, 3}));
  EXPECT_EQ(sd["features.28.weight"].sizes().vec(), (std::vector<int64_t>{512, 512, 3, 3}));
  EXPECT_EQ(sd["classifier.0.weight"].sizes().vec(), (std::vector<int64_t>{4096, 25088}));
  EXPECT_EQ(sd["classifier.6.weight"].sizes().vec(), (std::vector<int64_t>{1000, 4096}));

  // kaiming_normal_(fan_out, relu) convolutions, normal(0, 0.01) linears, zero biases.
  for (const auto& [key, expected] : std::map<std::string, double>{{"features.0.weight", std::sqrt(2.0 / (64 * 9))},
                                                                   {"features.17.weight", std::sqrt(2.0 / (512 * 9))},
                                                                   {"classifier.3.weight", 0.01}}) {
    EXPECT_NEAR(sd[key].std().item<double>(), expected, 0.05 * expected) << key;
    EXPECT_NEAR(sd[key].mean().item<double>(), 0.0, 0.05 * expected) << key;
  }
  for (const auto& key : {"features.0.bias", "features.28.bias", "classifier.0.bias", "classifier.6.bias"}) {
    EXPECT_EQ(sd[key].abs().max().item<float>(), 0.0f) << key;
  }

  torch::NoGradGuard no_grad;
  model->eval();
  EXPECT_EQ(model->forward(torch::randn({2, 3, 32, 32})).sizes().vec(), (std::vector<int64_t>{2, 1000}));
  EXPECT_EQ(model->forward(torch::randn({1, 3, 64, 40})).sizes().vec(), (std::vector<int64_t>{1, 1000}));
  EXPECT_THROW(model->forward(torch::randn({1, 3, 16, 32})), c10::Error);  // 5 pools need 32
  EXPECT_THROW(model->forward(torch::randn({1, 1, 32, 32})), c10::Error);
}

TEST(Vgg16Bn, MatchesTorchvision) {
  auto model = vgg16(10, /*batch_norm=*/true);
  // torchvision.models.vgg16_bn(): 138,365,992 with 1000 classes; the head is 4096 x 10 + 10 here.
  EXPECT_EQ(count_parameters(*model), 138365992 - 990 * 4096 - 990);
  auto sd = state_dict(*model);
  EXPECT_EQ(model->named_parameters().size(), 58u);
  EXPECT_EQ(sd.size(), 97u);  // 13 BatchNorms add running_mean, running_var, num_batches_tracked
  EXPECT_EQ(sd["features.1.weight"].sizes().vec(), (std::vector<int64_t>{64}));
  EXPECT_EQ(sd["features.41.running_var"].sizes().vec(), (std::vector<int64_t>{512}));
  EXPECT_EQ(sd["features.40.weight"].sizes().vec(), (std::vector<int64_t>{512, 512, 3, 3}));
  EXPECT_TRUE(torch::equal(sd["features.4.weight"], torch::ones({64})));  // conv, bn, relu, conv, bn
  torch::NoGradGuard no_grad;
  model->eval();
  EXPECT_EQ(model->forward(torch::randn({2, 3, 32, 32})).sizes().vec(), (std::vector<int64_t>{2, 10}));
}

TEST(Vgg, BadOptions) {
  VggOptions narrow;
  narrow.layers = {64, kVggPool};
  EXPECT_THROW(Vgg{narrow}, c10::ValueError);  // the classifier takes 512 channels
  VggOptions negative;
  negative.layers = {-3, 512};
  EXPECT_THROW(Vgg{negative}, c10::ValueError);
  VggOptions bad;
  bad.dropout = -0.1;
  EXPECT_THROW(Vgg{bad}, c10::ValueError);
  bad = {};
  bad.num_classes = 0;
  EXPECT_THROW(Vgg{bad}, c10::ValueError);
}

}  // namespace
