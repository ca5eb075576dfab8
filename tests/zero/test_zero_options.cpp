// The ZeroOptimizer's own param groups drive the inner optimizer (what LR
// schedules rely on), param groups can be built from the shard's names, and a
// layer-wise optimizer (LAMB) runs underneath.
#include <gtest/gtest.h>

#include "paisoar/optim/lamb.h"
#include "tests/zero/zero_harness.h"

using namespace paisoar;

namespace {

TEST(ZeroOptions, LearningRateSetOnTheZeroOptimizerReachesTheShard) {
  std::mutex mutex;
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto net = paisoar::testing::rank_net(rank, mutex);
    zero::ZeroOptimizer opt(net.ptr(), comm, paisoar::testing::factory({}), paisoar::testing::zero_options(2));
    auto before = opt.full_parameters();
    opt.param_groups()[0].options().set_lr(0.0);
    opt.zero_grad();
    net->forward(torch::ones({2, 8})).sum().backward();
    opt.step();
    paisoar::testing::expect_close(opt.full_parameters(), before, 0, 0);
    opt.param_groups()[0].options().set_lr(0.1);
    opt.zero_grad();
    net->forward(torch::ones({2, 8})).sum().backward();
    opt.step();
    EXPECT_FALSE(torch::equal(opt.full_parameters()[0], before[0]));
  });
}

// Groups by name: biases without weight decay. With lr 0 on the weights'
// group only the biases move.
TEST(ZeroOptions, ParamGroupsFromShardNames) {
  std::mutex mutex;
  paisoar::testing::run_ranks(3, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto net = paisoar::testing::rank_net(rank, mutex);
    zero::ZeroOptimizer opt(net.ptr(), comm, [](const std::vector<zero::ShardParam>& shard) {
      std::vector<torch::Tensor> weights, biases;
      for (const auto& s : shard) (s.name.find("bias") != std::string::npos ? biases : weights).push_back(s.tensor);
      std::vector<torch::optim::OptimizerParamGroup> groups;
      groups.emplace_back(weights, std::make_unique<torch::optim::SGDOptions>(0.0));
      groups.emplace_back(biases, std::make_unique<torch::optim::SGDOptions>(0.1));
      return std::make_unique<torch::optim::SGD>(groups, torch::optim::SGDOptions(0.1));
    }, paisoar::testing::zero_options(1));
    auto before = opt.full_parameters();
    opt.zero_grad();
    net->forward(torch::ones({2, 8})).sum().backward();
    opt.step();
    auto after = opt.full_parameters();
    EXPECT_TRUE(torch::equal(after[0], before[0]));   // 0.weight
    EXPECT_FALSE(torch::equal(after[1], before[1]));  // 0.bias
    EXPECT_TRUE(torch::equal(after[2], before[2]));   // 2.weight
    EXPECT_FALSE(torch::equal(after[3], before[3]));  // 2.bias
  });
}

// LAMB underneath runs and trains (its trust ratio is per piece: see ZERO.md).
TEST(ZeroOptions, LambRunsOnTheShard) {
  std::mutex mutex;
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto net = paisoar::testing::rank_net(rank, mutex);
    zero::ZeroOptimizer opt(net.ptr(), comm, [](const std::vector<zero::ShardParam>& shard) {
      return std::make_unique<optim::LAMB>(zero::tensors_of(shard), optim::LAMBOptions(0.01));
    }, paisoar::testing::zero_options(2));
    torch::manual_seed(3);
    auto x = torch::randn({16, 8});
    auto y = torch::randint(4, {16});
    double first = 0, last = 0;
    for (int s = 0; s < 20; ++s) {
      opt.zero_grad();
      auto loss = torch::cross_entropy_loss(net->forward(x), y);
      loss.backward();
      opt.step();
      (s == 0 ? first : last) = loss.item<double>();
    }
    EXPECT_LT(last, first);
  });
}

}  // namespace

namespace {

// The model check names the wrapper the user built, as DDP's names DDP.
TEST(ZeroOptions, DifferentModelsAreNamedAsTheZeroOptimizersError) {
  auto messages = paisoar::testing::rank_errors(2, [](int rank, std::shared_ptr<comm::Communicator> comm) {
    torch::nn::Sequential model(torch::nn::Linear(8, rank == 0 ? 4 : 5));
    zero::ZeroOptimizer opt(model.ptr(), comm, paisoar::testing::factory({}), paisoar::testing::zero_options(1));
  });
  for (const auto& m : messages) {
    EXPECT_NE(m.find("ZeroOptimizer: the model differs across ranks: rank 1 has parameter '0.weight' with "
                     "shape [5, 8]"),
              std::string::npos)
        << m;
  }
}

}  // namespace

namespace {

// Stage 3 over named units (a model whose forward paisoar does not run, as
// Python's): every trainable parameter in exactly one unit, else a ValueError
// naming it; unit_forward_begin/end gather and release one unit.
TEST(ZeroOptions, NamedUnitsCoverEveryParameterOnce) {
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto build = [&](std::vector<std::vector<std::string>> units) {
      torch::manual_seed(0);
      torch::nn::Sequential net(torch::nn::Linear(8, 6), torch::nn::Linear(6, 3));
      auto options = paisoar::testing::zero_options(3);
      options.units = std::move(units);
      return std::make_unique<zero::ZeroOptimizer>(net.ptr(), comm, paisoar::testing::factory({}), options);
    };
    auto message_of = [&](std::vector<std::vector<std::string>> units) {
      try {
        build(std::move(units));
      } catch (const c10::ValueError& e) {
        return std::string(e.what_without_backtrace());
      }
      return std::string("no error");
    };
    EXPECT_NE(message_of({{"0.weight", "0.bias"}, {"1.weight"}}).find("parameter '1.bias' is in no unit"),
              std::string::npos);
    EXPECT_NE(message_of({{"0.weight", "0.bias", "1.bias"}, {"1.weight", "1.bias"}})
                  .find("parameter '1.bias' is in units 0 and 1"),
              std::string::npos);
    EXPECT_NE(message_of({{"0.weight", "0.bias", "1.weight", "1.bias", "2.weight"}}).find("names '2.weight'"),
              std::string::npos);

    auto opt = build({{"0.weight", "0.bias"}, {"1.weight", "1.bias"}});
    const auto unit0 = opt->memory().params;
    opt->unit_forward_begin(0);  // gathers unit 0 and prefetches unit 1
    opt->unit_forward_end(1);
    EXPECT_EQ(opt->memory().params - unit0, (8 * 6 + 6) * 4);
    opt->unit_forward_end(0);
    EXPECT_EQ(opt->memory().params, unit0);
  });
}

}  // namespace
