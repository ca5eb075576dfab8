// Failures name the operation, the rank and the likely cause: mismatched calls,
// timeouts, a peer that went away, and invalid arguments.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <thread>

#include "tests/support/thread_ranks.h"

using paisoar::comm::Backend;
using paisoar::comm::CommError;
using paisoar::comm::CommOptions;
using paisoar::comm::Communicator;
using paisoar::comm::ReduceOp;
using paisoar::testing::run_ranks;

namespace {

bool mentions(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Every case on Gloo and on the in-process backend: the errors are the same.
class CommErrors : public ::testing::TestWithParam<Backend> {
 protected:
  CommOptions options() const { return paisoar::testing::test_options(GetParam()); }
};

TEST_P(CommErrors, MismatchedShapesAreNamedOnEveryRank) {
  CommOptions options = this->options();
  options.check_collectives = true;
  std::vector<std::string> messages(2);
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    comm->allreduce(torch::ones({4})).wait();  // matching call passes the check
    try {
      comm->allreduce(torch::ones({rank == 0 ? 4 : 5})).wait();
    } catch (const CommError& e) {
      EXPECT_EQ(e.cause(), CommError::Cause::Mismatch);
      messages[rank] = e.what();
    }
  }, options);
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(messages[rank]);
    EXPECT_TRUE(mentions(messages[rank], "allreduce #2 on rank " + std::to_string(rank)));
    EXPECT_TRUE(mentions(messages[rank], "Float[4]"));
    EXPECT_TRUE(mentions(messages[rank], "Float[5]"));
  }
}

TEST_P(CommErrors, MismatchedOperationsAreNamed) {
  CommOptions options = this->options();
  options.check_collectives = true;
  std::vector<std::string> messages(2);
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    auto t = torch::ones({8});
    try {
      if (rank == 0) comm->allreduce(t).wait();
      else comm->broadcast(t, 0).wait();
    } catch (const CommError& e) {
      messages[rank] = e.what();
    }
  }, options);
  EXPECT_TRUE(mentions(messages[0], "a different operation")) << messages[0];
  EXPECT_TRUE(mentions(messages[1], "does not match rank 0")) << messages[1];
}

TEST_P(CommErrors, TimeoutNamesOperationRankAndCause) {
  CommOptions options = this->options();
  options.timeout = std::chrono::milliseconds(500);
  std::string message;
  CommError::Cause cause = CommError::Cause::Other;
  std::atomic<bool> rank0_done{false};
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    if (rank == 0) {
      try {
        comm->allreduce(torch::ones({16})).wait();
      } catch (const CommError& e) {
        message = e.what();
        cause = e.cause();
      }
      rank0_done = true;
    } else {
      // Rank 1 never joins the allreduce; it stays alive until rank 0 gave up.
      while (!rank0_done) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }, options);
  EXPECT_EQ(cause, CommError::Cause::Timeout) << message;
  EXPECT_TRUE(mentions(message, "allreduce #1 on rank 0 of group 'world'")) << message;
  EXPECT_TRUE(mentions(message, "did not join")) << message;
}

TEST_P(CommErrors, PeerThatLeftIsReported) {
  CommOptions options = this->options();
  options.timeout = std::chrono::seconds(20);
  std::string message;
  CommError::Cause cause = CommError::Cause::Other;
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    comm->barrier().wait();
    if (rank == 1) {
      comm.reset();  // closes rank 1's connections, as a crashed process would
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    try {
      comm->allreduce(torch::ones({1 << 16})).wait();
    } catch (const CommError& e) {
      message = e.what();
      cause = e.cause();
    }
  }, options);
  EXPECT_EQ(cause, CommError::Cause::PeerDied) << message;
  EXPECT_TRUE(mentions(message, "allreduce #2 on rank 0")) << message;
  EXPECT_TRUE(mentions(message, "a peer rank exited or crashed")) << message;
}

TEST_P(CommErrors, InvalidArgumentsAreClearErrors) {
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    auto expect_invalid = [](const std::function<void()>& fn, const std::string& part) {
      try {
        fn();
        ADD_FAILURE() << "no error, expected one mentioning " << part;
      } catch (const CommError& e) {
        EXPECT_EQ(e.cause(), CommError::Cause::InvalidArgument) << e.what();
        EXPECT_TRUE(mentions(e.what(), part)) << e.what();
      }
    };
    expect_invalid([&] { comm->allreduce(torch::ones({3}, torch::kInt), ReduceOp::Avg); },
                   "avg of a Int tensor");
    expect_invalid([&] { comm->allreduce(torch::ones({3}, torch::kBool)); }, "cannot reduce");
    expect_invalid([&] { comm->reduce_scatter(torch::ones({3}), torch::ones({5})); },
                   "size() * output.numel() = 6");
    expect_invalid([&] { comm->broadcast(torch::ones({3}), 5); }, "root 5");
    expect_invalid([&] { comm->send(torch::ones({3}), rank); }, "another rank");
    expect_invalid([&] { comm->recv(torch::ones({3}), 1 - rank, 1 << 30); }, "tag 1073741824");
    expect_invalid([&] { comm->allgather_into(torch::ones({3}), torch::ones({2})); },
                   "output must have");
  }, options());
}

INSTANTIATE_TEST_SUITE_P(Backends, CommErrors, ::testing::Values(Backend::Gloo, Backend::Threads, Backend::Shm),
                         [](const auto& info) { return std::string(paisoar::comm::to_string(info.param)); });

}  // namespace
