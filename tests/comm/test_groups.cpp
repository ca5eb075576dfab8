// Subgroups and device meshes: membership, ranks, and collectives inside them.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "paisoar/comm/device_mesh.h"
#include "tests/support/thread_ranks.h"

using paisoar::comm::Communicator;
using paisoar::comm::DeviceMesh;
using paisoar::testing::run_ranks;

TEST(Groups, EvenAndOddRanksReduceSeparately) {
  run_ranks(4, [](int rank, std::shared_ptr<Communicator> world) {
    auto evens = world->new_group({0, 2});
    auto odds = world->new_group({3, 1});  // order does not matter
    auto mine = rank % 2 == 0 ? evens : odds;
    EXPECT_EQ(rank % 2 == 0 ? odds : evens, nullptr);
    ASSERT_NE(mine, nullptr);
    EXPECT_EQ(mine->size(), 2);
    EXPECT_EQ(mine->rank(), rank / 2);
    EXPECT_EQ(mine->global_ranks(), (rank % 2 == 0 ? std::vector<int>{0, 2} : std::vector<int>{1, 3}));
    auto t = torch::full({5}, static_cast<float>(rank));
    mine->allreduce(t).wait();
    EXPECT_FLOAT_EQ(t[0].item<float>(), rank % 2 == 0 ? 2.0f : 4.0f);
    // The world still works after subgroups were made.
    auto w = torch::ones({3});
    world->allreduce(w).wait();
    EXPECT_FLOAT_EQ(w[2].item<float>(), 4.0f);
  }, paisoar::testing::test_options(paisoar::comm::Backend::Gloo));
}

TEST(Groups, NestedSubgroupAndBadRanks) {
  run_ranks(4, [](int rank, std::shared_ptr<Communicator> world) {
    auto first3 = world->new_group({0, 1, 2});
    if (rank == 3) {
      EXPECT_EQ(first3, nullptr);
      return;
    }
    auto pair = first3->new_group({1, 2});  // world ranks 1 and 2
    if (rank == 0) {
      EXPECT_EQ(pair, nullptr);
    } else {
      EXPECT_EQ(pair->global_ranks(), (std::vector<int>{1, 2}));
      auto t = torch::full({2}, static_cast<double>(rank));
      pair->allreduce(t).wait();
      EXPECT_DOUBLE_EQ(t[0].item<double>(), 3.0);
    }
    EXPECT_THROW(first3->new_group({0, 0}), c10::ValueError);
    EXPECT_THROW(first3->new_group({3}), c10::ValueError);
  }, paisoar::testing::test_options(paisoar::comm::Backend::Gloo));
}

TEST(DeviceMeshTest, TwoByTwoMeshHasRowAndColumnGroups) {
  run_ranks(4, [](int rank, std::shared_ptr<Communicator> world) {
    DeviceMesh mesh(world, {2, 2}, {"data", "tensor"});
    EXPECT_EQ(mesh.coordinate(), (std::vector<int>{rank / 2, rank % 2}));
    auto tp = mesh.group("tensor");
    auto dp = mesh.group("data");
    EXPECT_EQ(tp->global_ranks(), (std::vector<int>{rank / 2 * 2, rank / 2 * 2 + 1}));
    EXPECT_EQ(dp->global_ranks(), (std::vector<int>{rank % 2, rank % 2 + 2}));
    auto t = torch::full({1}, static_cast<float>(rank));
    tp->allreduce(t).wait();
    EXPECT_FLOAT_EQ(t.item<float>(), rank < 2 ? 1.0f : 5.0f);
    auto d = torch::full({1}, static_cast<float>(rank));
    dp->allreduce(d).wait();
    EXPECT_FLOAT_EQ(d.item<float>(), rank % 2 == 0 ? 2.0f : 4.0f);
    EXPECT_EQ(mesh.rank_at({1, 0}), 2);
    EXPECT_THROW(mesh.group("pipeline"), c10::IndexError);
  });
}

TEST(DeviceMeshTest, ThreeDimensionalMesh) {
  run_ranks(8, [](int rank, std::shared_ptr<Communicator> world) {
    DeviceMesh mesh(world, {2, 2, 2}, {"data", "pipeline", "tensor"});
    for (int d = 0; d < 3; ++d) {
      auto g = mesh.group(d);
      ASSERT_EQ(g->size(), 2);
      auto t = torch::full({1}, static_cast<float>(rank));
      g->allreduce(t).wait();
      int stride = 1 << (2 - d);  // row-major strides 4, 2, 1
      int low = rank & ~stride;
      EXPECT_FLOAT_EQ(t.item<float>(), static_cast<float>(2 * low + stride)) << "dim " << d;
    }
  });
}

TEST(DeviceMeshTest, ShapeMustMultiplyToWorldSize) {
  run_ranks(2, [](int, std::shared_ptr<Communicator> world) {
    try {
      DeviceMesh mesh(world, {2, 2});
      ADD_FAILURE() << "a 2x2 mesh over 2 ranks was accepted";
    } catch (const c10::ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("2 x 2 = 4 ranks, but the world has 2"),
                std::string::npos)
          << e.what();
    }
  });
}
