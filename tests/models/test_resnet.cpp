// models::ResNet: ResNet-18 has torchvision's parameter count, state_dict keys
// and shapes, output shapes for several input sizes, and torchvision's init.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

#include "paisoar/models/resnet.h"

using paisoar::models::ResNet;
using paisoar::models::resnet18;
using paisoar::models::ResNetOptions;

namespace {

int64_t count_parameters(torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

// torchvision's state_dict: parameters and buffers by dotted name.
std::map<std::string, torch::Tensor> state_dict(torch::nn::Module& m) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& p : m.named_parameters()) out[p.key()] = p.value();
  for (const auto& b : m.named_buffers()) out[b.key()] = b.value();
  return out;
}

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
  EXPECT_THROW(ResNet{bad}, std::invalid_argument);
}

}  // namespace
