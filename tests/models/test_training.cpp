// Every reference model learns: a few plain SGD steps on one fixed, tiny batch
// lower its loss. Catches a forward that detaches the graph, parameters that
// are not registered (so get no update) and broken initialisations. Sizes are
// kept small so the suite stays quick on two cores.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <vector>

#include "paisoar/models.h"

namespace models = paisoar::models;

namespace {

// Losses of `loss_of()` before each of `steps` SGD steps and after the last
// one (steps + 1 values), every step on the same batch.
std::vector<double> sgd_losses(torch::nn::Module& model, const std::function<torch::Tensor()>& loss_of, int steps,
                               double lr) {
  torch::optim::SGD sgd(model.parameters(), torch::optim::SGDOptions(lr));
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    sgd.zero_grad();
    auto loss = loss_of();
    losses.push_back(loss.item<double>());
    loss.backward();
    sgd.step();
  }
  torch::NoGradGuard no_grad;
  losses.push_back(loss_of().item<double>());
  return losses;
}

// The mean of the last `last_n` losses is below `fraction` of the first
// (last_n > 1 for a model whose loss on one tiny batch zigzags as it falls).
void expect_learned(const std::vector<double>& losses, double fraction, size_t last_n = 1) {
  std::string trace;
  for (double l : losses) trace += std::to_string(l) + " ";
  double tail = 0;
  for (size_t i = losses.size() - last_n; i < losses.size(); ++i) tail += losses[i];
  EXPECT_LT(tail / last_n, fraction * losses.front()) << "losses: " << trace;
}

TEST(Training, Mlp) {
  torch::manual_seed(0);
  models::Mlp model;
  auto x = torch::rand({8, 1, 28, 28});
  auto y = torch::randint(10, {8}, torch::kLong);
  auto losses = sgd_losses(*model, [&] { return torch::nn::functional::cross_entropy(model->forward(x), y); }, 10, 0.1);
  expect_learned(losses, 0.75);
}

TEST(Training, ResNet50) {
  torch::manual_seed(0);
  auto model = models::resnet50(10);
  auto x = torch::randn({4, 3, 64, 64});
  auto y = torch::tensor({0, 1, 2, 3}, torch::kLong);
  // Training mode throughout: BatchNorm normalises with the batch's statistics.
  // BatchNorm on 4 samples makes the loss zigzag as it falls, and where it
  // lands after a given step depends on the CPU's kernels and thread count
  // (2.516 -> 1.06-1.59 at steps 8-10 over 1-2 threads on AVX2 and AMX
  // machines), so the mean of the last 3 is checked; a model that does not
  // learn stays near 2.5. Batches of 2 or lr 0.05 diverge, in PyTorch too.
  auto losses = sgd_losses(*model, [&] { return torch::nn::functional::cross_entropy(model->forward(x), y); }, 10, 0.002);
  expect_learned(losses, 0.6, 3);
}

TEST(Training, Vgg16) {
  torch::manual_seed(0);
  models::VggOptions options;
  options.num_classes = 10;
  options.dropout = 0.0;  // a deterministic loss over so few steps
  models::Vgg model(options);
  auto x = torch::randn({2, 3, 32, 32});
  auto y = torch::tensor({1, 8}, torch::kLong);
  auto losses = sgd_losses(*model, [&] { return torch::nn::functional::cross_entropy(model->forward(x), y); }, 3, 0.01);
  expect_learned(losses, 0.9);
}

TEST(Training, Gpt) {
  torch::manual_seed(0);
  models::Gpt model;
  auto tokens = torch::randint(256, {2, 17}, torch::kLong);
  using torch::indexing::Slice;
  auto idx = tokens.index({Slice(), Slice(0, 16)}), targets = tokens.index({Slice(), Slice(1, 17)});
  // From ln(256) = 5.55 (near-uniform predictions) to about half that.
  auto losses = sgd_losses(*model, [&] { return models::GptImpl::loss(model->forward(idx), targets); }, 10, 0.1);
  expect_learned(losses, 0.75);
}

}  // namespace
