// FiniteLossCheck: stop names the step, skip counts and gives up after the
// configured run of bad steps, and ranks agree when only one sees the NaN.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <limits>

#include "paisoar/amp/finite_loss_check.h"
#include "tests/support/thread_ranks.h"

using namespace paisoar::amp;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(FiniteLossCheck, StopThrowsWithTheStepNumber) {
  FiniteLossCheck check;
  EXPECT_TRUE(check(torch::tensor(1.5), 6));
  try {
    check(torch::tensor(kNaN), 7);
    FAIL() << "expected NonFiniteLossError";
  } catch (const NonFiniteLossError& e) {
    EXPECT_EQ(e.step(), 7);
    EXPECT_NE(std::string(e.what()).find("non-finite loss (nan) at step 7"), std::string::npos)
        << e.what();
  }
}

TEST(FiniteLossCheck, SkipCountsAndStopsAfterTooManyInARow) {
  FiniteLossCheckOptions options;
  options.action = OnNonFiniteLoss::Skip;
  options.max_consecutive_skips = 3;
  FiniteLossCheck check(options);
  EXPECT_FALSE(check(torch::tensor(kInf), 1));
  EXPECT_FALSE(check(torch::tensor(kNaN), 2));
  EXPECT_TRUE(check(torch::tensor(0.5), 3));  // the run resets
  EXPECT_FALSE(check(torch::tensor(kNaN), 4));
  EXPECT_FALSE(check(torch::tensor(kNaN), 5));
  EXPECT_EQ(check.skipped_steps(), 4);
  EXPECT_THROW(check(torch::tensor(kNaN), 6), NonFiniteLossError);
}

TEST(FiniteLossCheck, RanksAgreeWhenOnlyOneSeesTheNaN) {
  std::atomic<int> skipped{0};
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<paisoar::comm::Communicator> comm) {
    FiniteLossCheckOptions options;
    options.action = OnNonFiniteLoss::Skip;
    FiniteLossCheck check(options, comm);
    EXPECT_TRUE(check(torch::tensor(1.0), 0));
    if (!check(torch::tensor(rank == 1 ? kNaN : 2.0), 1)) ++skipped;
    EXPECT_TRUE(check(torch::tensor(1.0), 2));
  });
  EXPECT_EQ(skipped.load(), 2);
}

TEST(FiniteLossCheck, StopOnEveryRankNamesWhoSawIt) {
  std::atomic<int> stopped{0};
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<paisoar::comm::Communicator> comm) {
    FiniteLossCheck check({}, comm);
    try {
      check(torch::tensor(rank == 0 ? kInf : 2.0), 9);
    } catch (const NonFiniteLossError& e) {
      ++stopped;
      EXPECT_EQ(e.step(), 9);
      const bool says_other = std::string(e.what()).find("on another rank") != std::string::npos;
      EXPECT_EQ(says_other, rank == 1) << e.what();
    }
  });
  EXPECT_EQ(stopped.load(), 2);
}

}  // namespace
