// Backend::Threads, the in-process fake the logic tests run on: it opens no
// socket, it forms subgroups, and a rank outside this process is refused with
// a clear error. (Its results against Gloo's: WorldsAndDtypes/Collectives.*,
// its errors: Backends/CommErrors.*.)
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "tests/support/thread_ranks.h"

using paisoar::comm::Backend;
using paisoar::comm::CommError;
using paisoar::comm::Communicator;
using paisoar::comm::Store;
using paisoar::testing::run_ranks;

namespace {

int open_sockets() {
  int sockets = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  while (dirent* entry = readdir(dir)) {
    char target[256];
    const std::string path = std::string("/proc/self/fd/") + entry->d_name;
    const ssize_t n = readlink(path.c_str(), target, sizeof target - 1);
    if (n > 0 && std::string(target, n).rfind("socket:", 0) == 0) ++sockets;
  }
  closedir(dir);
  return sockets;
}

TEST(ThreadBackend, FourRanksAndTheirSubgroupsOpenNoSocket) {
  const int before = open_sockets();
  ASSERT_GE(before, 0) << "no /proc/self/fd";
  std::atomic<int> during{-1};
  run_ranks(4, [&](int rank, std::shared_ptr<Communicator> world) {
    auto low = world->new_group({0, 1});  // every rank creates both, in one order
    auto high = world->new_group({2, 3});
    auto pair = rank < 2 ? low : high;
    auto t = torch::full({1000}, static_cast<float>(rank));
    world->allreduce(t).wait();
    EXPECT_EQ(t[0].item<float>(), 0.f + 1.f + 2.f + 3.f);
    auto s = torch::full({3}, static_cast<float>(rank));
    pair->allreduce(s).wait();
    EXPECT_EQ(s[0].item<float>(), rank < 2 ? 1.f : 5.f);
    auto mine = torch::full({5}, static_cast<float>(rank));
    auto theirs = torch::empty({5});
    auto sent = pair->send(mine, 1 - pair->rank());
    pair->recv(theirs, 1 - pair->rank()).wait();
    sent.wait();
    EXPECT_EQ(theirs[0].item<float>(), static_cast<float>(rank ^ 1));
    world->barrier().wait();
    if (rank == 0) during = open_sockets();
    world->barrier().wait();
  }, paisoar::testing::test_options(Backend::Threads));
  EXPECT_EQ(during.load(), before);
}

TEST(ThreadBackend, ARankOfAnotherProcessIsRefused) {
  Store store = Store::hash();
  // What rank 0 of another process would have published: a group id not in this one.
  store.set("world.1/threads/id", "1.999");
  try {
    Communicator::create(store, 1, 2, paisoar::testing::test_options(Backend::Threads));
    ADD_FAILURE() << "rank 1 joined a group whose rank 0 is elsewhere";
  } catch (const CommError& e) {
    EXPECT_NE(std::string(e.what()).find("threads of one process"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("use backend 'gloo'"), std::string::npos) << e.what();
  }
}

}  // namespace
