// HybridMesh: the rank grid and its groups, the layout check (a clear error
// on every rank, before any collective), and which parameters a tensor group
// replicates.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>

#include "paisoar/hybrid.h"
#include "tests/hybrid/hybrid_testing.h"
#include "tests/pipeline/pipeline_testing.h"
#include "tests/support/thread_ranks.h"

namespace paisoar {
namespace {

using hybrid::HybridMesh;
using hybrid::ParallelLayout;

TEST(HybridMesh, RanksAreLaidOutDataThenPipelineThenTensor) {
  paisoar::testing::run_ranks(8, [](int rank, std::shared_ptr<comm::Communicator> world) {
    HybridMesh mesh(world, ParallelLayout{2, 2, 2});
    EXPECT_EQ(mesh.data_rank(), rank / 4);
    EXPECT_EQ(mesh.pipeline_rank(), rank / 2 % 2);
    EXPECT_EQ(mesh.tensor_rank(), rank % 2);
    EXPECT_EQ(mesh.data_group()->size(), 2);
    EXPECT_EQ(mesh.pipeline_group()->size(), 2);
    EXPECT_EQ(mesh.tensor_group()->size(), 2);
    EXPECT_EQ(mesh.model_group()->size(), 4);
    EXPECT_EQ(mesh.model_group()->rank(), rank % 4);
    // Each group sums over exactly the ranks that differ in its dimension only.
    torch::Tensor t = torch::tensor({static_cast<float>(rank)});
    mesh.tensor_group()->allreduce(t).wait();
    EXPECT_EQ(t.item<float>(), static_cast<float>(2 * (rank / 2 * 2) + 1));
    t = torch::tensor({static_cast<float>(rank)});
    mesh.data_group()->allreduce(t).wait();
    EXPECT_EQ(t.item<float>(), static_cast<float>(2 * (rank % 4) + 4));
  });
}

TEST(HybridMesh, ALayoutThatDoesNotFitTheWorldIsRefusedOnEveryRank) {
  const auto errors = paisoar::testing::rank_errors(4, [](int, std::shared_ptr<comm::Communicator> world) {
    // The refusal comes before any collective, so a rank would otherwise drop
    // its world at once and could close connections a slower rank was still
    // forming (seen once in CI as "could not form group 'world'"): every rank
    // waits for the others first.
    try {
      HybridMesh mesh(world, ParallelLayout{1, 3, 1});
    } catch (const c10::Error&) {
      world->barrier().wait();
      throw;
    }
    world->barrier().wait();
  });
  paisoar::testing::expect_every_rank_failed(
      errors, {"data 1 x pipeline 3 x tensor 1 = 3 ranks", "the world has 4", "product is 4"});
  EXPECT_EQ(hybrid::layout_problem(ParallelLayout{2, 0, 1}, 2), "data 2 x pipeline 0 x tensor 1: every size must be at least 1");
  EXPECT_EQ(hybrid::layout_problem(ParallelLayout{2, 2, 1}, 4), "");
}

TEST(TensorReplicatedParameters, AreThoseNoParallelLayerSplits) {
  std::mutex seed_mutex;
  paisoar::testing::run_ranks(2, [&](int, std::shared_ptr<comm::Communicator> world) {
    auto split = paisoar::testing::seeded_model(seed_mutex, [&] {
      return paisoar::testing::make_hybrid_split(paisoar::testing::make_hybrid_reference(), world);
    }, 3);
    std::vector<std::string> names;
    const auto replicated = hybrid::tensor_replicated_parameters(*split);
    for (const auto& p : split->named_parameters()) {
      for (const auto& r : replicated) {
        if (r.is_same(p.value())) names.push_back(p.key());
      }
    }
    EXPECT_EQ(names, (std::vector<std::string>{"0.2.bias", "2.2.bias", "3.weight", "3.bias"}));
  });
}

}  // namespace
}  // namespace paisoar
