// DDP's bad input: models that differ across ranks, a parameter without a
// gradient, a model converted after wrapping, a rank that never joins a
// backward: each a clear error, on every rank that can see it, never a hang.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <thread>

#include "paisoar/ddp.h"
#include "tests/ddp/ddp_models.h"
#include "tests/support/thread_ranks.h"

using namespace paisoar;

namespace {

std::vector<std::string> errors_of(const std::function<void(int, std::shared_ptr<comm::Communicator>)>& fn,
                                   comm::CommOptions options = paisoar::testing::test_options()) {
  return paisoar::testing::rank_errors(2, fn, options);
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(DdpErrors, DifferentModelsNameTheFirstDifferenceOnEveryRank) {
  auto messages = errors_of([](int rank, std::shared_ptr<comm::Communicator> comm) {
    torch::nn::Sequential model(torch::nn::Linear(8, rank == 0 ? 4 : 5));
    DistributedDataParallel<torch::nn::Sequential> ddp(model, comm);
  });
  for (const auto& m : messages) {
    EXPECT_TRUE(contains(m, "the model differs across ranks")) << m;
    EXPECT_TRUE(contains(m, "rank 1 has parameter '0.weight' with shape [5, 8]")) << m;
  }
  auto count = errors_of([](int rank, std::shared_ptr<comm::Communicator> comm) {
    torch::nn::Sequential model(torch::nn::Linear(8, 4));
    if (rank == 1) model->push_back(torch::nn::Linear(4, 4));
    DistributedDataParallel<torch::nn::Sequential> ddp(model, comm);
  });
  for (const auto& m : count) EXPECT_TRUE(contains(m, "rank 1 has 4 parameters, rank 0 has 2")) << m;
}

TEST(DdpErrors, MissingGradientWithoutFindUnusedNamesTheParameter) {
  auto messages = errors_of([](int rank, std::shared_ptr<comm::Communicator> comm) {
    paisoar::testing::Branchy model;
    DistributedDataParallel<paisoar::testing::Branchy> ddp(model, comm);
    ddp(torch::randn({2, 8}), rank == 1).sum().backward();
  });
  for (const auto& m : messages) {
    EXPECT_TRUE(contains(m, "parameter 'b.weight' received no gradient")) << m;
    EXPECT_TRUE(contains(m, "find_unused_parameters")) << m;
  }
  EXPECT_TRUE(contains(messages[0], "on 1 of 2 ranks (this rank: none)")) << messages[0];
}

TEST(DdpErrors, ConvertingTheModelAfterWrappingIsCaught) {
  auto messages = errors_of([](int, std::shared_ptr<comm::Communicator> comm) {
    auto model = paisoar::testing::make_mlp();
    DistributedDataParallel<torch::nn::Sequential> ddp(model, comm);
    model->to(torch::kDouble);
    ddp(torch::randn({2, 8}, torch::kDouble));
  });
  for (const auto& m : messages) {
    EXPECT_TRUE(contains(m, "was converted or replaced after the model was wrapped")) << m;
    EXPECT_TRUE(contains(m, "before wrapping it")) << m;
  }
}

TEST(DdpErrors, ARankThatNeverJoinsTimesOutInsteadOfHanging) {
  auto options = paisoar::testing::test_options();
  options.timeout = std::chrono::milliseconds(1500);
  auto messages = errors_of([](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto model = paisoar::testing::make_mlp();
    DistributedDataParallel<torch::nn::Sequential> ddp(model, comm);
    if (rank == 0) ddp(torch::randn({2, 8})).sum().backward();
    else std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // alive, not joining
  }, options);
  EXPECT_TRUE(contains(messages[0], "timed out after 1500 ms: a peer rank did not join")) << messages[0];
  EXPECT_EQ(messages[1], "");
}

TEST(DdpErrors, BadOptionsNameTheField) {
  auto messages = errors_of([](int, std::shared_ptr<comm::Communicator> comm) {
    auto model = paisoar::testing::make_mlp();
    ddp::DdpOptions options;
    options.bucket_cap_mb = 0;
    DistributedDataParallel<torch::nn::Sequential> ddp(model, comm, options);
  });
  for (const auto& m : messages) EXPECT_TRUE(contains(m, "DdpOptions::bucket_cap_mb must be > 0")) << m;
}

}  // namespace
