// amp::MasterWeights ("O2"): the fp32 masters follow an fp32 optimizer fed the
// same gradients exactly, keep updates too small for bf16, and work with the
// GradScaler.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "paisoar/amp/grad_scaler.h"
#include "paisoar/amp/master_weights.h"

using paisoar::amp::GradScaler;
using paisoar::amp::MasterWeights;

namespace {

TEST(MasterWeights, MastersFollowAnFp32OptimizerFedTheSameGradients) {
  torch::manual_seed(3);
  auto w32 = torch::randn({4, 3});
  auto model_w = w32.to(torch::kBFloat16).requires_grad_();
  auto model_b = torch::zeros({4}, torch::kBFloat16).requires_grad_();
  MasterWeights master({model_w, model_b});
  torch::optim::SGD opt(master.params(), torch::optim::SGDOptions(0.1).momentum(0.9));

  // The reference: fp32 tensors starting from the same (bf16-rounded) values.
  auto ref_w = model_w.detach().to(torch::kFloat).requires_grad_();
  auto ref_b = model_b.detach().to(torch::kFloat).requires_grad_();
  torch::optim::SGD ref(std::vector<torch::Tensor>{ref_w, ref_b}, torch::optim::SGDOptions(0.1).momentum(0.9));

  auto x = torch::randn({8, 3}, torch::kBFloat16);
  for (int step = 0; step < 4; ++step) {
    opt.zero_grad();
    ref.zero_grad();
    auto loss = torch::nn::functional::linear(x, model_w, model_b).pow(2).mean();
    loss.backward();
    master.copy_grads_to_master();
    ref_w.mutable_grad() = model_w.grad().to(torch::kFloat);
    ref_b.mutable_grad() = model_b.grad().to(torch::kFloat);
    opt.step();
    ref.step();
    master.copy_master_to_model();
    EXPECT_TRUE(torch::equal(master.params()[0], ref_w)) << "step " << step;
    EXPECT_TRUE(torch::equal(model_w, ref_w.to(torch::kBFloat16))) << "step " << step;
    EXPECT_EQ(model_w.scalar_type(), torch::kBFloat16);
  }
}

TEST(MasterWeights, KeepsUpdatesTooSmallForBf16) {
  // 1.0 in bf16 has an ulp of 2^-7; steps of 2^-10 vanish in bf16 but add up in fp32.
  auto pure = torch::ones({1}, torch::kBFloat16);
  auto model = torch::ones({1}, torch::kBFloat16).requires_grad_();
  MasterWeights master({model});
  torch::optim::SGD opt(master.params(), torch::optim::SGDOptions(std::ldexp(1.0, -10)));
  for (int step = 0; step < 16; ++step) {
    pure -= std::ldexp(1.0, -10);  // plain bf16 training: rounds back to 1 every time
    model.mutable_grad() = torch::ones({1}, torch::kBFloat16);
    master.copy_grads_to_master();
    opt.step();
    master.copy_master_to_model();
  }
  EXPECT_EQ(pure.item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(master.params()[0].item<float>(), 1.0f - 16 * std::ldexp(1.0f, -10));
  EXPECT_FLOAT_EQ(model.item<float>(), 1.0f - std::ldexp(1.0f, -6));  // 0.984375 is a bf16 value
}

TEST(MasterWeights, WorksWithTheGradScalerAndSkipsOverflow) {
  auto model = torch::ones({2}, torch::kBFloat16).requires_grad_();
  MasterWeights master({model});
  torch::optim::SGD opt(master.params(), torch::optim::SGDOptions(0.5));
  GradScaler scaler;
  scaler.scale((model * torch::tensor({1.0, 2.0}, torch::kBFloat16)).sum()).backward();
  master.copy_grads_to_master();
  EXPECT_TRUE(scaler.step(opt));
  scaler.update();
  master.copy_master_to_model();
  EXPECT_TRUE(torch::equal(model, torch::tensor({0.5, 0.0}, torch::kBFloat16)));
  // bf16 overflows at the scale: the step is skipped and the model is unchanged.
  opt.zero_grad();
  model.mutable_grad() = torch::full({2}, std::numeric_limits<float>::infinity(), torch::kBFloat16);
  master.copy_grads_to_master();
  EXPECT_FALSE(scaler.step(opt));
  scaler.update();
  master.copy_master_to_model();
  EXPECT_TRUE(torch::equal(model, torch::tensor({0.5, 0.0}, torch::kBFloat16)));
}

TEST(MasterWeights, NonFloatingParameterIsAClearError) {
  EXPECT_THROW(MasterWeights({torch::ones({2}, torch::kLong)}), c10::ValueError);
}

}  // namespace
