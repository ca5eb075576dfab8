// models::ResNet: ResNet-18 and ResNet-50 have torchvision's parameter counts,
// state_dict keys and shapes, output shapes for several input sizes, and
// torchvision's init (zero_init_residual included).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

#include "paisoar/models/resnet.h"
#include "tests/models/module_stats.h"

using paisoar::models::ResNet;
using paisoar::models::resnet18;
using paisoar::models::resnet50;
using paisoar::models::ResNetBlock;
using paisoar::models::ResNetOptions;
using paisoar::models::testing::count_parameters;
using paisoar::models::testing::state_dict;

namespace {

TEST(ResNet18, ParameterCountIsTorchvisions) {
  auto imagenet = resnet18();
  EXPECT_EQ(count_parameters(*imagenet), 11689512);  // torchvision.models.resnet18()
  auto ten = resnet18(10);
  EXPECT_EQ(count_parameters(*ten), 11689512 - 990 * 512 - 990);  // fc 512x10 + 10
}

TEST(ResNet18, StateDictKeysAndShapesAreTorchvisions) {
  auto model = resnet18();
  auto sd = state_dict(*model);
  // 62 parameters; 20 BatchNorms with running_mean, running_var, num_batches_tracked.
  EXPECT_EQ(model->named_parameters().size(), 62u);
  EXPECT_EQ(sd.size(), 122u);
  const std::map<std::string, std::vector<int64_t>> expected = {
      {"conv1.weight", {64, 3, 7, 7}},
      {"bn1.weight", {64}},
      {"bn1.running_mean", {64}},
      {"bn1.num_batches_tracked", {}},
      {"layer1.0.conv1.weight", {64, 64, 3, 3}},
      {"layer1.1.bn2.bias", {64}},
      {"layer2.0.conv1.weight", {128, 64, 3, 3}},
      {"layer2.0.downsample.0.weight", {128, 64, 1, 1}},
      {"layer2.0.downsample.1.running_var", {128}},
      {"layer3.1.conv2.weight", {256, 256, 3, 3}},
      {"layer4.0.downsample.0.weight", {512, 256, 1, 1}},
      {"layer4.1.bn2.num_batches_tracked", {}},
      {"fc.weight", {1000, 512}},
      {"fc.bias", {1000}},
  };
  for (const auto& [key, shape] : expected) {
    ASSERT_TRUE(sd.count(key)) << key << " is missing";
    EXPECT_EQ(sd[key].sizes().vec(), shape) << key;
  }
  // Only the first block of layers 2-4 changes width or stride.
  EXPECT_FALSE(sd.count("layer1.0.downsample.0.weight"));
  EXPECT_FALSE(sd.count("layer2.1.downsample.0.weight"));
  // Registration order is torchvision's, which state_dict keeps.
  auto params = model->named_parameters();
  EXPECT_EQ(params.begin()->key(), "conv1.weight");
  EXPECT_EQ((params.end() - 1)->key(), "fc.bias");
  std::vector<std::string> block;
  for (const auto& p : params) {
    if (p.key().rfind("layer2.0.", 0) == 0) block.push_back(p.key());
  }
  EXPECT_EQ(block,
            (std::vector<std::string>{"layer2.0.conv1.weight", "layer2.0.bn1.weight", "layer2.0.bn1.bias",
                                      "layer2.0.conv2.weight", "layer2.0.bn2.weight", "layer2.0.bn2.bias",
                                      "layer2.0.downsample.0.weight", "layer2.0.downsample.1.weight",
                                      "layer2.0.downsample.1.bias"}));
}

TEST(ResNet18, OutputShapes) {
  torch::NoGradGuard no_grad;
  auto imagenet = resnet18();
  imagenet->eval();
  EXPECT_EQ(imagenet->forward(torch::randn({2, 3, 224, 224})).sizes().vec(), (std::vector<int64_t>{2, 1000}));
  auto ten = resnet18(10);
  ten->eval();
  EXPECT_EQ(ten->forward(torch::randn({3, 3, 64, 64})).sizes().vec(), (std::vector<int64_t>{3, 10}));
  EXPECT_EQ(ten->forward(torch::randn({1, 3, 32, 32})).sizes().vec(), (std::vector<int64_t>{1, 10}));
  EXPECT_EQ(ten->forward(torch::randn({2, 3, 112, 80})).sizes().vec(), (std::vector<int64_t>{2, 10}));
  EXPECT_THROW(ten->forward(torch::randn({1, 1, 64, 64})), c10::Error);
}

TEST(ResNet18, InitialisationIsTorchvisions) {
  torch::manual_seed(0);
  auto model = resnet18();
  auto sd = state_dict(*model);
  // kaiming_normal_(fan_out, relu): std = sqrt(2 / (out_channels * kh * kw)).
  for (const auto& [key, shape_std] :
       std::map<std::string, double>{{"conv1.weight", std::sqrt(2.0 / (64 * 49))},
                                     {"layer3.0.conv2.weight", std::sqrt(2.0 / (256 * 9))},
                                     {"layer4.1.conv1.weight", std::sqrt(2.0 / (512 * 9))}}) {
    double std = sd[key].std().item<double>();
    EXPECT_NEAR(std, shape_std, 0.05 * shape_std) << key;
  }
  EXPECT_TRUE(torch::equal(sd["layer2.1.bn1.weight"], torch::ones({128})));
  EXPECT_TRUE(torch::equal(sd["layer2.1.bn1.bias"], torch::zeros({128})));
  EXPECT_TRUE(torch::equal(sd["layer2.1.bn2.weight"], torch::ones({128})));
  // Linear keeps PyTorch's default: uniform within 1/sqrt(fan_in).
  EXPECT_LE(sd["fc.weight"].abs().max().item<double>(), 1 / std::sqrt(512.0));

  ResNetOptions zero;
  zero.zero_init_residual = true;
  auto zeroed = state_dict(*ResNet(zero));
  EXPECT_TRUE(torch::equal(zeroed["layer2.1.bn2.weight"], torch::zeros({128})));
  EXPECT_TRUE(torch::equal(zeroed["layer2.1.bn1.weight"], torch::ones({128})));
}

TEST(ResNet, OtherDepthsAndBadOptions) {
  ResNetOptions r34;
  r34.blocks = {3, 4, 6, 3};
  EXPECT_EQ(count_parameters(*ResNet(r34)), 21797672);  // torchvision.models.resnet34()
  ResNetOptions bad;
  bad.blocks = {2, 0, 2, 2};
  EXPECT_THROW(ResNet{bad}, c10::ValueError);
}

TEST(ResNet50, ParameterCountIsTorchvisions) {
  EXPECT_EQ(count_parameters(*resnet50()), 25557032);  // torchvision.models.resnet50()
  EXPECT_EQ(count_parameters(*resnet50(10)), 25557032 - 990 * 2048 - 990);  // fc 2048x10 + 10
}

TEST(ResNet50, StateDictKeysAndShapesAreTorchvisions) {
  auto model = resnet50();
  auto sd = state_dict(*model);
  // 161 parameters; 53 BatchNorms with three buffers each.
  EXPECT_EQ(model->named_parameters().size(), 161u);
  EXPECT_EQ(sd.size(), 320u);
  const std::map<std::string, std::vector<int64_t>> expected = {
      {"conv1.weight", {64, 3, 7, 7}},
      {"layer1.0.conv1.weight", {64, 64, 1, 1}},
      {"layer1.0.conv3.weight", {256, 64, 1, 1}},
      {"layer1.0.bn3.weight", {256}},
      {"layer1.0.downsample.0.weight", {256, 64, 1, 1}},  // width changes, stride does not
      {"layer2.0.conv2.weight", {128, 128, 3, 3}},
      {"layer2.0.downsample.0.weight", {512, 256, 1, 1}},
      {"layer3.5.conv1.weight", {256, 1024, 1, 1}},
      {"layer4.2.conv3.weight", {2048, 512, 1, 1}},
      {"layer4.2.bn3.running_var", {2048}},
      {"fc.weight", {1000, 2048}},
  };
  for (const auto& [key, shape] : expected) {
    ASSERT_TRUE(sd.count(key)) << key << " is missing";
    EXPECT_EQ(sd[key].sizes().vec(), shape) << key;
  }
  EXPECT_FALSE(sd.count("layer1.1.downsample.0.weight"));
  EXPECT_FALSE(sd.count("layer3.6.conv1.weight"));  // {3, 4, 6, 3} blocks
  std::vector<std::string> block;
  for (const auto& p : model->named_parameters()) {
    if (p.key().rfind("layer1.0.", 0) == 0) block.push_back(p.key());
  }
  EXPECT_EQ(block, (std::vector<std::string>{
                       "layer1.0.conv1.weight", "layer1.0.bn1.weight", "layer1.0.bn1.bias", "layer1.0.conv2.weight",
                       "layer1.0.bn2.weight", "layer1.0.bn2.bias", "layer1.0.conv3.weight", "layer1.0.bn3.weight",
                       "layer1.0.bn3.bias", "layer1.0.downsample.0.weight", "layer1.0.downsample.1.weight",
                       "layer1.0.downsample.1.bias"}));
}

TEST(ResNet50, OutputShapesAndStride) {
  torch::NoGradGuard no_grad;
  auto model = resnet50(10);
  model->eval();
  EXPECT_EQ(model->forward(torch::randn({2, 3, 64, 64})).sizes().vec(), (std::vector<int64_t>{2, 10}));
  EXPECT_EQ(model->forward(torch::randn({1, 3, 32, 48})).sizes().vec(), (std::vector<int64_t>{1, 10}));
  // ResNet v1.5: a stage's first Bottleneck strides in its 3x3 conv, not the 1x1.
  auto* first = model->layer2[0]->as<paisoar::models::Bottleneck>();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->conv1->options.stride()->at(0), 1);
  EXPECT_EQ(first->conv2->options.stride()->at(0), 2);
  auto features = model->layer1->forward(torch::randn({1, 64, 16, 16}));
  EXPECT_EQ(features.sizes().vec(), (std::vector<int64_t>{1, 256, 16, 16}));
}

TEST(ResNet50, ZeroInitResidualZeroesEachBottlenecksLastNorm) {
  ResNetOptions options;
  options.blocks = {3, 4, 6, 3};
  options.block = ResNetBlock::kBottleneck;
  auto plain = state_dict(*ResNet(options));
  EXPECT_TRUE(torch::equal(plain["layer3.2.bn3.weight"], torch::ones({1024})));
  options.zero_init_residual = true;
  auto zeroed = state_dict(*ResNet(options));
  for (const auto& [key, value] : zeroed) {
    const bool last_norm = key.size() > 11 && key.compare(key.size() - 11, 11, ".bn3.weight") == 0;
    if (last_norm) EXPECT_TRUE(torch::equal(value, torch::zeros_like(value))) << key;
  }
  EXPECT_TRUE(torch::equal(zeroed["layer3.2.bn2.weight"], torch::ones({256})));
  EXPECT_TRUE(torch::equal(zeroed["layer3.0.downsample.1.weight"], torch::ones({1024})));
}

}  // namespace
