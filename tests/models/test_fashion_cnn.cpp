// models::FashionCnn: the documented architecture (parameter counts, names,
// shapes) in both variants, and the input check.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "paisoar/models/fashion_cnn.h"
#include "tests/models/module_stats.h"

using paisoar::models::FashionCnn;
using paisoar::models::FashionCnnOptions;
using paisoar::models::testing::count_parameters;
using paisoar::models::testing::parameter_names;

namespace {

TEST(FashionCnn, PlainVariant) {
  FashionCnn model;
  // conv1 32*9+32, conv2 64*32*9+64, fc1 3136*128+128, fc2 128*10+10.
  EXPECT_EQ(count_parameters(*model), 320 + 18496 + 401536 + 1290);
  EXPECT_EQ(parameter_names(*model),
            (std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                      "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_TRUE(model->named_buffers().is_empty());
  EXPECT_EQ(model->forward(torch::randn({5, 1, 28, 28})).sizes().vec(), (std::vector<int64_t>{5, 10}));
}

TEST(FashionCnn, BatchNormVariant) {
  FashionCnnOptions o;
  o.batch_norm = true;
  o.num_classes = 7;
  FashionCnn model(o);
  // The convolutions lose their biases (96) and gain two BatchNorms (2*32 + 2*64).
  EXPECT_EQ(count_parameters(*model), 288 + 64 + 18432 + 128 + 401536 + 128 * 7 + 7);
  EXPECT_EQ(parameter_names(*model),
            (std::vector<std::string>{"conv1.weight", "bn1.weight", "bn1.bias", "conv2.weight", "bn2.weight",
                                      "bn2.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  EXPECT_EQ(model->named_buffers().size(), 6u);  // running_mean, running_var, num_batches_tracked x 2
  auto out = model->forward(torch::randn({4, 1, 28, 28}));
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{4, 7}));
  // Training mode updates the running statistics.
  EXPECT_EQ(model->named_buffers()["bn1.num_batches_tracked"].item<int64_t>(), 1);
}

TEST(FashionCnn, RejectsOtherInputs) {
  FashionCnn model;
  EXPECT_THROW(model->forward(torch::randn({2, 3, 28, 28})), c10::Error);
  EXPECT_THROW(model->forward(torch::randn({2, 1, 32, 32})), c10::Error);
  FashionCnnOptions none;
  none.num_classes = 0;
  EXPECT_THROW(FashionCnn{none}, c10::ValueError);
}

}  // namespace
