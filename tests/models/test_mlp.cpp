// models::Mlp: parameter count against the documented formula, names, shapes
// for image and flat inputs, dropout only in training, and the option and
// input checks.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "paisoar/models/mlp.h"
#include "tests/models/module_stats.h"

using paisoar::models::Mlp;
using paisoar::models::MlpOptions;
using paisoar::models::testing::count_parameters;
using paisoar::models::testing::parameter_names;

namespace {

// sum over consecutive widths of w_in * w_out + w_out.
int64_t mlp_parameters(const MlpOptions& o) {
  std::vector<int64_t> widths = {o.in_features};
  widths.insert(widths.end(), o.hidden.begin(), o.hidden.end());
  widths.push_back(o.num_classes);
  int64_t n = 0;
  for (size_t i = 0; i + 1 < widths.size(); ++i) n += widths[i] * widths[i + 1] + widths[i + 1];
  return n;
}

TEST(Mlp, DefaultsAreDocumented) {
  Mlp model;
  EXPECT_EQ(count_parameters(*model), 535818);
  EXPECT_EQ(count_parameters(*model), mlp_parameters(MlpOptions{}));
  EXPECT_EQ(parameter_names(*model),
            (std::vector<std::string>{"hidden.0.weight", "hidden.0.bias", "hidden.1.weight", "hidden.1.bias",
                                      "head.weight", "head.bias"}));
  EXPECT_EQ(model->hidden[1]->as<torch::nn::Linear>()->weight.sizes().vec(), (std::vector<int64_t>{256, 512}));
  // Images are flattened; flat inputs pass as they are.
  EXPECT_EQ(model->forward(torch::randn({3, 1, 28, 28})).sizes().vec(), (std::vector<int64_t>{3, 10}));
  EXPECT_EQ(model->forward(torch::randn({5, 784})).sizes().vec(), (std::vector<int64_t>{5, 10}));
}

TEST(Mlp, OtherShapes) {
  MlpOptions deep;
  deep.in_features = 12;
  deep.hidden = {7, 5, 3};
  deep.num_classes = 4;
  Mlp model(deep);
  EXPECT_EQ(count_parameters(*model), mlp_parameters(deep));
  EXPECT_EQ(count_parameters(*model), 12 * 7 + 7 + 7 * 5 + 5 + 5 * 3 + 3 + 3 * 4 + 4);
  EXPECT_EQ(model->forward(torch::randn({2, 3, 4})).sizes().vec(), (std::vector<int64_t>{2, 4}));

  MlpOptions linear;
  linear.hidden = {};
  Mlp logistic(linear);
  EXPECT_EQ(count_parameters(*logistic), 784 * 10 + 10);
  EXPECT_EQ(logistic->forward(torch::randn({1, 784})).sizes().vec(), (std::vector<int64_t>{1, 10}));
}

TEST(Mlp, DropoutOnlyWhileTraining) {
  MlpOptions o;
  o.dropout = 0.5;
  Mlp model(o);
  auto x = torch::randn({4, 784});
  torch::NoGradGuard no_grad;
  model->eval();
  EXPECT_TRUE(torch::equal(model->forward(x), model->forward(x)));
  model->train();
  EXPECT_FALSE(torch::equal(model->forward(x), model->forward(x)));
}

TEST(Mlp, RejectsBadOptionsAndInputs) {
  Mlp model;
  EXPECT_THROW(model->forward(torch::randn({2, 1, 32, 32})), c10::Error);
  EXPECT_THROW(model->forward(torch::randn({784})), c10::Error);
  MlpOptions bad;
  bad.hidden = {64, 0};
  EXPECT_THROW(Mlp{bad}, c10::ValueError);
  bad = {};
  bad.dropout = 1.0;
  EXPECT_THROW(Mlp{bad}, c10::ValueError);
  bad = {};
  bad.num_classes = 0;
  EXPECT_THROW(Mlp{bad}, c10::ValueError);
}

}  // namespace
