// ParallelGpt built from a models::Gpt equals it: logits, loss and the
// gradient of every parameter (shards gathered) within kTpRtol/kTpAtol, for
// groups of 2 and 4 ranks as threads.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "paisoar/models/gpt.h"
#include "paisoar/tensor_parallel/parallel_gpt.h"
#include "tests/support/thread_ranks.h"
#include "tests/tensor_parallel/tp_testing.h"

namespace paisoar::tensor_parallel {
namespace {

using paisoar::testing::expect_tp_close;
using paisoar::testing::full_gradient;
using paisoar::testing::run_ranks;

class TpGpt : public ::testing::TestWithParam<int> {};

TEST_P(TpGpt, ParallelGptMatchesGpt) {
  const models::GptOptions o = paisoar::testing::small_gpt_options();
  torch::manual_seed(7);
  models::Gpt full(o);
  auto idx = torch::randint(0, 32, {2, 6}, torch::kLong);
  auto targets = torch::randint(0, 32, {2, 6}, torch::kLong);
  auto want = full(idx);
  auto want_loss = models::GptImpl::loss(want, targets);
  want_loss.backward();
  const auto full_params = full->named_parameters();

  run_ranks(GetParam(), [&](int, std::shared_ptr<comm::Communicator> group) {
    ParallelGpt model(o, group);
    model->load_full(*full);
    auto logits = model(idx);
    expect_tp_close(logits, want.detach(), "logits");
    auto loss = models::GptImpl::loss(logits, targets);
    expect_tp_close(loss, want_loss.detach(), "loss");
    loss.backward();
    const auto params = model->named_parameters();
    ASSERT_EQ(params.size(), full_params.size());
    for (const auto& p : full_params) {
      ASSERT_TRUE(params.contains(p.key())) << p.key();
      expect_tp_close(full_gradient(p.key(), params[p.key()].grad(), *group), p.value().grad(),
                      "gradient of " + p.key());
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Groups, TpGpt, ::testing::Values(2, 4));

}  // namespace
}  // namespace paisoar::tensor_parallel
