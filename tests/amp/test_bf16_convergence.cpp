// bf16 autocast training reaches the loss fp32 training reaches: a small CNN,
// the first 4096 Fashion-MNIST training images, 2 epochs of SGD from the same
// weights and batch order, then the loss on 2000 test images. Tolerance: 0.05
// nats (the two runs differ by bf16 rounding only; the loss falls from ~2.3).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "paisoar/amp/autocast.h"
#include "paisoar/data/idx.h"

namespace {

const std::string kDir = "/usr/share/datasets/fashion-mnist/";

struct SmallCnnImpl : torch::nn::Module {
  SmallCnnImpl() {
    conv1 = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 16, 3).padding(1)));
    conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 3).padding(1)));
    fc = register_module("fc", torch::nn::Linear(32 * 7 * 7, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    return fc(x.flatten(1));
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(SmallCnn);

torch::Tensor images(const std::string& file, int64_t n) {
  return paisoar::data::read_idx(kDir + file).narrow(0, 0, n).unsqueeze(1).to(torch::kFloat) / 255.0;
}
torch::Tensor labels(const std::string& file, int64_t n) {
  return paisoar::data::read_idx(kDir + file).narrow(0, 0, n).to(torch::kLong);
}

double train_and_test(bool bf16) {
  auto x = images("train-images-idx3-ubyte.gz", 4096);
  auto y = labels("train-labels-idx1-ubyte.gz", 4096);
  torch::manual_seed(0);
  SmallCnn model;
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  for (int epoch = 0; epoch < 2; ++epoch) {
    auto order = torch::randperm(4096, torch::TensorOptions().dtype(torch::kLong));
    for (int64_t i = 0; i < 4096; i += 64) {
      auto idx = order.narrow(0, i, 64);
      opt.zero_grad();
      torch::Tensor loss;
      {
        paisoar::amp::AutocastOptions o;
        o.enabled = bf16;
        paisoar::amp::autocast guard(o);
        loss = torch::cross_entropy_loss(model(x.index_select(0, idx)), y.index_select(0, idx));
      }
      loss.backward();
      opt.step();
    }
  }
  torch::NoGradGuard no_grad;
  auto tx = images("t10k-images-idx3-ubyte.gz", 2000);
  auto ty = labels("t10k-labels-idx1-ubyte.gz", 2000);
  return torch::cross_entropy_loss(model(tx), ty).item<double>();
}

TEST(Bf16Convergence, SmallCnnReachesTheFp32Loss) {
  if (!std::filesystem::exists(kDir + "train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (scripts/setup.sh installs it)";
  }
  const double fp32 = train_and_test(false);
  const double bf16 = train_and_test(true);
  EXPECT_LT(fp32, 0.8) << "fp32 training did not learn";
  EXPECT_NEAR(bf16, fp32, 0.05);
  std::printf("test loss after 2 epochs on 4096 images: fp32 %.4f, bf16 %.4f\n", fp32, bf16);
}

}  // namespace
