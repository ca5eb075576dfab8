// send/recv match by tag, as c10d's do: receives posted in another order
// than the sends, several messages of one tag in order, a message that arrives
// before its receive, a receive nothing matches (a timeout naming the peer).
// On Gloo (the reference) and on the backends of our own that carry them.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <thread>

#include "tests/support/thread_ranks.h"

using paisoar::comm::Backend;
using paisoar::comm::CommError;
using paisoar::comm::Communicator;
using paisoar::comm::Work;
using paisoar::testing::run_ranks;

namespace {

struct SetOnExit {
  std::atomic<bool>& flag;
  ~SetOnExit() { flag = true; }
};

// Posts a receive of `tag` from `src`, which nobody sends; it must time out.
// Returns its error.
std::string receive_that_times_out(Communicator& comm, int src, int tag) {
  auto t = torch::empty({4});
  try {
    comm.recv(t, src, tag).wait();
    ADD_FAILURE() << "a receive of a tag nobody sends completed";
  } catch (const CommError& e) {
    EXPECT_EQ(e.cause(), CommError::Cause::Timeout) << e.what();
    return e.what();
  }
  return "";
}

class PointToPoint : public ::testing::TestWithParam<Backend> {};

torch::Tensor message(int64_t numel, int tag) { return torch::arange(numel, torch::kFloat).add(1000.f * tag); }

TEST_P(PointToPoint, ReceivesMatchByTagNotByOrder) {
  // The pipeline's links post header, payload and late receives ahead of time.
  const std::vector<int64_t> sizes{5, 300000, 7};  // the middle one spans several shm mailbox pieces
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    if (rank == 0) {
      std::vector<Work> sends;
      for (int tag = 1; tag <= 3; ++tag) sends.push_back(comm->send(message(sizes[tag - 1], tag), 1, tag));
      for (auto& w : sends) w.wait();
      return;
    }
    std::vector<torch::Tensor> got;
    std::vector<Work> recvs;
    for (int tag = 3; tag >= 1; --tag) {
      got.push_back(torch::empty({sizes[tag - 1]}));
      recvs.push_back(comm->recv(got.back(), 0, tag));
    }
    for (auto& w : recvs) w.wait();
    for (int tag = 3; tag >= 1; --tag) EXPECT_TRUE(torch::equal(got[3 - tag], message(sizes[tag - 1], tag))) << tag;
  }, paisoar::testing::test_options(GetParam()));
}

TEST_P(PointToPoint, MessagesOfOneTagArriveInOrderEvenBeforeTheirReceive) {
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    if (rank == 0) {
      std::vector<Work> sends;
      for (int i = 0; i < 4; ++i) sends.push_back(comm->send(message(1000, i), 1, 7));
      sends.push_back(comm->send(message(3, 9), 1, 9));
      for (auto& w : sends) w.wait();
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the sends are out first
    auto last = torch::empty({3});
    Work other = comm->recv(last, 0, 9);
    for (int i = 0; i < 4; ++i) {
      auto t = torch::empty({1000});
      comm->recv(t, 0, 7).wait();
      EXPECT_TRUE(torch::equal(t, message(1000, i))) << i;
    }
    other.wait();
    EXPECT_TRUE(torch::equal(last, message(3, 9)));
  }, paisoar::testing::test_options(GetParam()));
}

TEST_P(PointToPoint, NonContiguousReceivesAreWrittenBack) {
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    auto expected = torch::arange(600, torch::kDouble).view({20, 30});
    if (rank == 0) {
      comm->send(expected.t().contiguous(), 1, 4).wait();
      return;
    }
    auto target = torch::zeros({20, 30}, torch::kDouble).t();  // not contiguous
    comm->recv(target, 0, 4).wait();
    EXPECT_TRUE(torch::equal(target, expected.t()));
  }, paisoar::testing::test_options(GetParam()));
}

TEST_P(PointToPoint, AReceiveNothingMatchesTimesOut) {
  auto options = paisoar::testing::test_options(GetParam());
  options.timeout = std::chrono::milliseconds(500);
  std::string error;
  std::atomic<bool> gave_up{false};
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    if (rank == 0) {  // alive, sending nothing, until rank 1 gave up
      while (!gave_up) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return;
    }
    SetOnExit release{gave_up};  // rank 0 must not wait forever if this rank fails
    error = receive_that_times_out(*comm, 0, 2);
  }, options);
  EXPECT_NE(error.find("recv from 0 #0 on rank 1"), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(Backends, PointToPoint, ::testing::Values(Backend::Gloo, Backend::Shm),
                         [](const auto& info) { return paisoar::comm::to_string(info.param); });

// Shm only (Gloo's group does not outlive a failed receive): a timed-out
// receive leaves the messages of other tags where they were.
TEST(ShmPointToPoint, ATimedOutReceiveLeavesOtherMessages) {
  auto options = paisoar::testing::test_options(Backend::Shm);
  options.timeout = std::chrono::milliseconds(300);
  std::atomic<bool> done{false};
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    if (rank == 0) {
      comm->send(message(4, 1), 1, 1).wait();  // eager: done before its receive is posted
      while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return;
    }
    SetOnExit release{done};  // rank 0 must not wait forever if this rank fails
    receive_that_times_out(*comm, 0, 2);
    auto right = torch::empty({4});
    comm->recv(right, 0, 1).wait();
    EXPECT_TRUE(torch::equal(right, message(4, 1)));
  }, options);
}

// Shm only: the mismatch is caught by the receive, which fails alone.
TEST(ShmPointToPoint, ASizeMismatchFailsTheReceiveAndKeepsTheGroup) {
  std::string error;
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    if (rank == 0) {
      comm->send(message(10, 1), 1, 1).wait();
      comm->send(message(3, 2), 1, 2).wait();
      return;
    }
    auto small = torch::empty({4});
    try {
      comm->recv(small, 0, 1).wait();
      ADD_FAILURE() << "a receive of 4 floats took a message of 10";
    } catch (const CommError& e) {
      error = e.what();
    }
    auto next = torch::empty({3});
    comm->recv(next, 0, 2).wait();
    EXPECT_TRUE(torch::equal(next, message(3, 2)));
  }, paisoar::testing::test_options(Backend::Shm));
  EXPECT_NE(error.find("rank 0 sent 40 bytes"), std::string::npos) << error;
  EXPECT_NE(error.find("expects 16"), std::string::npos) << error;
}

}  // namespace
