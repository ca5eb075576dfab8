// BatchStoragePool: a returned block is handed out again for the same size,
// blocks come back from any thread, and a tensor outlives the pool's handle.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>
#include <vector>

#include "src/data/batch_storage_pool.h"

namespace paisoar::data {
namespace {

TEST(BatchStoragePool, ReusesAReturnedBlockOfTheSameSize) {
  auto pool = BatchStoragePool::create(2);
  void* first = nullptr;
  {
    torch::Tensor t = pool->empty({4, 3, 5}, torch::kFloat32);
    EXPECT_EQ(t.sizes(), torch::IntArrayRef({4, 3, 5}));
    EXPECT_EQ(t.scalar_type(), torch::kFloat32);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64, 0u);
    t.fill_(1.5f);
    first = t.data_ptr();
  }
  torch::Tensor again = pool->empty({4, 3, 5}, torch::kFloat32);
  EXPECT_EQ(again.data_ptr(), first);
  torch::Tensor other = pool->empty({4, 3, 6}, torch::kFloat32);  // another size: another block
  EXPECT_NE(other.data_ptr(), first);
}

TEST(BatchStoragePool, TensorsOutliveThePoolAndComeBackFromOtherThreads) {
  torch::Tensor kept;
  {
    auto pool = BatchStoragePool::create(4);
    kept = pool->empty({8}, torch::kInt64);
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&pool, i] {
        for (int k = 0; k < 200; ++k) pool->empty({16 + i}, torch::kFloat64).fill_(k);
      });
    }
    for (auto& t : threads) t.join();
  }
  kept.fill_(7);  // the pool's last handle is gone; the block is still this tensor's
  EXPECT_EQ(kept.sum().item<int64_t>(), 56);
}

}  // namespace
}  // namespace paisoar::data
