// Stores: TCPStore rendezvous with a free port, prefixes, and a Communicator
// formed over TCP the way separate processes would.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

#include "paisoar/comm/communicator.h"

using paisoar::comm::Communicator;
using paisoar::comm::Store;

TEST(StoreTest, HashStoreSetGetAddAndPrefix) {
  Store store = Store::hash();
  store.set("a", "1");
  EXPECT_EQ(store.get("a"), "1");
  EXPECT_EQ(store.add("n", 2), 2);
  EXPECT_EQ(store.add("n", 3), 5);
  Store scoped = store.with_prefix("job");
  scoped.set("a", "2");
  EXPECT_EQ(store.get("a"), "1");
  EXPECT_EQ(scoped.get("a"), "2");
  EXPECT_TRUE(store.check({"job/a"}));
}

TEST(StoreTest, TcpStoreWithFreePortFormsAGroup) {
  Store server = Store::tcp("127.0.0.1", 0, true, 3, std::chrono::seconds(30));
  int port = server.port();
  ASSERT_GT(port, 0);
  std::vector<std::thread> threads;
  std::vector<double> results(3);
  for (int rank = 0; rank < 3; ++rank) {
    threads.emplace_back([&, rank] {
      Store store = rank == 0 ? server
                              : Store::tcp("127.0.0.1", port, false, 3, std::chrono::seconds(30));
      auto comm = Communicator::create(store, rank, 3);
      auto t = torch::full({4}, static_cast<double>(rank + 1));
      comm->allreduce(t).wait();
      results[rank] = t[3].item<double>();
    });
  }
  for (auto& t : threads) t.join();
  for (double r : results) EXPECT_DOUBLE_EQ(r, 6.0);
}

// A job restarted in the same processes forms its group again over the same store.
TEST(StoreTest, SecondGroupOverTheSameStore) {
  Store store = Store::hash();
  for (int round = 1; round <= 2; ++round) {
    std::vector<std::thread> threads;
    std::vector<float> results(2);
    for (int rank = 0; rank < 2; ++rank) {
      threads.emplace_back([&, rank] {
        auto comm = Communicator::create(store, rank, 2);
        auto t = torch::full({3}, static_cast<float>(round * (rank + 1)));
        comm->allreduce(t).wait();
        results[rank] = t[0].item<float>();
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_FLOAT_EQ(results[0], 3.0f * round);
    EXPECT_FLOAT_EQ(results[1], 3.0f * round);
  }
}

TEST(StoreTest, BadPortIsAClearError) {
  EXPECT_THROW(Store::tcp("127.0.0.1", 0, false, 2, std::chrono::seconds(1)),
               c10::ValueError);
  EXPECT_THROW(Store::tcp("127.0.0.1", 70000, true, 2, std::chrono::seconds(1)),
               c10::ValueError);
}
