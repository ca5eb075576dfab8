// Backend::Shm beyond the shared suites (WorldsAndDtypes/Collectives.*_shm,
// Backends/CommErrors.*): messages larger than a slot or a mailbox go in
// pieces with the same results, non-contiguous tensors are written back, and
// no segment is left in /dev/shm, during the run or after it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "tests/support/thread_ranks.h"

using paisoar::comm::Backend;
using paisoar::comm::Communicator;
using paisoar::testing::run_ranks;

namespace {

int shm_segments_of_this_process() {
  const std::string prefix = "paisoar-" + std::to_string(::getuid()) + "-" + std::to_string(::getpid()) + "-";
  int count = 0;
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return 0;
  while (dirent* entry = readdir(dir)) count += std::string(entry->d_name).rfind(prefix, 0) == 0;
  closedir(dir);
  return count;
}

TEST(ShmBackend, LargeMessagesGoInPiecesAndLeaveNoSegment) {
  ASSERT_EQ(shm_segments_of_this_process(), 0);
  std::atomic<int> during{-1};
  const int64_t big = (3 << 20) / 4 + 17;  // 3 MiB of floats and an odd tail: four slot pieces
  run_ranks(3, [&](int rank, std::shared_ptr<Communicator> comm) {
    auto t = torch::arange(big, torch::kDouble).mul(rank + 1);
    comm->allreduce(t).wait();
    EXPECT_TRUE(torch::equal(t, torch::arange(big, torch::kDouble).mul(6)));

    auto strided = torch::full({400, 300}, static_cast<float>(rank)).t();  // not contiguous
    comm->allreduce(strided, paisoar::comm::ReduceOp::Max).wait();
    EXPECT_TRUE(torch::equal(strided, torch::full({300, 400}, 2.f)));

    auto mine = torch::full({big}, static_cast<float>(rank));  // a ring of 3 MiB sends: 12 mailbox pieces
    auto theirs = torch::empty({big});
    auto sent = comm->send(mine, (rank + 1) % 3, 3);
    comm->recv(theirs, (rank + 2) % 3, 3).wait();
    sent.wait();
    EXPECT_TRUE(torch::equal(theirs, torch::full({big}, static_cast<float>((rank + 2) % 3))));

    std::vector<torch::Tensor> all{torch::empty({big}), torch::empty({big}), torch::empty({big})};
    comm->allgather(all, mine).wait();
    for (int r = 0; r < 3; ++r) EXPECT_EQ(all[r][big - 1].item<float>(), static_cast<float>(r));
    comm->barrier().wait();
    if (rank == 0) during = shm_segments_of_this_process();
    comm->barrier().wait();
  }, paisoar::testing::test_options(Backend::Shm));
  EXPECT_EQ(during.load(), 0) << "the segment is unlinked once every rank has mapped it";
  EXPECT_EQ(shm_segments_of_this_process(), 0);
}

}  // namespace

namespace {

TEST(ShmBackend, TheCommunicatorNamesItsBackend) {
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    EXPECT_EQ(comm->backend_name(), "paisoar-shm");
    auto t = torch::full({5}, static_cast<float>(rank));
    comm->allreduce(t).wait();
    EXPECT_EQ(t[0].item<float>(), 1.f);
  }, paisoar::testing::test_options(Backend::Shm));
  run_ranks(2, [&](int, std::shared_ptr<Communicator> comm) { EXPECT_EQ(comm->backend_name(), "gloo"); },
            paisoar::testing::test_options(Backend::Gloo));
}

TEST(ShmBackend, AutoChoosesItForRanksOnThisHostAndItsSubgroups) {
  // Threads of one process share everything the host check compares.
  run_ranks(3, [&](int rank, std::shared_ptr<Communicator> comm) {
    EXPECT_EQ(comm->backend_name(), "paisoar-shm");
    auto pair = comm->new_group({0, 2});
    if (rank != 1) {
      ASSERT_TRUE(pair);
      EXPECT_EQ(pair->backend_name(), "paisoar-shm");
      auto t = torch::full({3}, static_cast<float>(rank));
      pair->allreduce(t).wait();
      EXPECT_EQ(t[0].item<float>(), 2.f);
    }
  }, paisoar::testing::test_options(Backend::Auto));
  // One rank has no one to share with: Gloo, as before.
  run_ranks(1, [&](int, std::shared_ptr<Communicator> comm) { EXPECT_EQ(comm->backend_name(), "gloo"); },
            paisoar::testing::test_options(Backend::Auto));
}

}  // namespace

namespace shm_eager_send_test {

// A send of one mailbox piece goes out on the caller's thread only when no
// earlier send to that peer is in flight: behind a large send it waits its
// turn, so messages with the same tag arrive in the order they were sent.
TEST(ShmBackend, ASmallSendBehindALargeOneKeepsItsOrder) {
  run_ranks(2, [&](int rank, std::shared_ptr<Communicator> comm) {
    const int64_t big = (3 << 20) / 4 + 5;  // several mailbox pieces: goes through the send lane
    if (rank == 0) {
      std::vector<paisoar::comm::Work> sends;
      for (int i = 0; i < 4; ++i) {
        sends.push_back(comm->send(torch::full({i % 2 ? int64_t{3} : big}, static_cast<float>(i)), 1, 7));
      }
      for (auto& s : sends) s.wait();
      return;
    }
    for (int i = 0; i < 4; ++i) {
      auto got = torch::empty({i % 2 ? int64_t{3} : big});
      comm->recv(got, 0, 7).wait();
      EXPECT_TRUE(torch::equal(got, torch::full_like(got, static_cast<float>(i)))) << "message " << i;
    }
  }, paisoar::testing::test_options(Backend::Shm));
}

}  // namespace shm_eager_send_test
