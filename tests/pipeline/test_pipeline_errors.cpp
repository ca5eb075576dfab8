// Bad pipelines fail with a clear error on EVERY rank, never a hang (a hang
// would surface as the 30 s test timeout): activation shapes that do not fit
// the next stage, a stage whose backward throws, ranks that disagree on the
// options or the split, a plan for another number of stages, too few rows,
// a missing target, a loss that is not one element. A pipeline that failed a
// step can run the next one.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <utility>
#include <vector>

#include "paisoar/pipeline.h"
#include "tests/pipeline/pipeline_testing.h"
#include "tests/support/expect_error.h"

using namespace paisoar;
using namespace paisoar::pipeline;
using paisoar::testing::expect_every_rank_failed;
using paisoar::testing::make_pipeline_mlp;
using paisoar::testing::pipeline_loss;
using paisoar::testing::rank_errors;

namespace {

PartitionPlan plan_of(int layers, std::vector<int> bounds) {
  return plan_from_bounds(std::vector<LayerCost>(layers, LayerCost{"", 1.0, 1}), bounds);
}

PipelineOptions with(int micro_batches, Schedule schedule = Schedule::OneFOneB) {
  PipelineOptions o;
  o.micro_batches = micro_batches;
  o.schedule = schedule;
  return o;
}

// Passes the identity forward and throws in backward.
struct ThrowInBackwardImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    x = x * 1.0;
    x.register_hook([](torch::Tensor g) -> torch::Tensor {
      TORCH_CHECK(false, "backward exploded");
      return g;
    });
    return x;
  }
};
TORCH_MODULE(ThrowInBackward);

}  // namespace

TEST(PipelineErrors, MismatchedActivationShapesFailOnEveryRank) {
  for (Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB}) {
    // Stage 0 gives 16 features, stage 1 expects 32.
    auto make = [] {
      namespace nn = torch::nn;
      return nn::Sequential(nn::Linear(8, 16), nn::Tanh(), nn::Linear(32, 4), nn::Linear(4, 4));
    };
    const PartitionPlan plan = plan_of(4, {0, 2, 3, 4});
    auto errors = rank_errors(3, [&](int, std::shared_ptr<comm::Communicator> comm) {
      Pipeline pipe(make(), plan, comm, pipeline_loss, with(4, schedule));
      pipe.step(torch::randn({16, 8}), torch::randint(4, {16}));
    });
    expect_every_rank_failed(errors, {"pipeline step failed", "stage 1 of 3", "layers 2-2",
                                      "forward of micro-batch 0", "[4, 16]", "mat1 and mat2"});
  }
}

TEST(PipelineErrors, OutputsThatCannotTravelFailOnEveryRank) {
  // Stage 0's last layer returns `out`'s result: nothing, or 9 dimensions (at most 8 travel).
  auto run = [](std::function<torch::Tensor(torch::Tensor)> out) {
    return rank_errors(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
      torch::nn::Sequential stage = rank == 0 ? torch::nn::Sequential(torch::nn::Linear(8, 8), torch::nn::Functional(out))
                                              : torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(8, 4));
      Pipeline pipe(stage, comm, pipeline_loss, with(2));
      pipe.step(torch::randn({4, 8}), torch::randint(4, {4}));
    });
  };
  expect_every_rank_failed(run([](torch::Tensor) { return torch::Tensor(); }),
                           {"stage 0 of 2", "its output is undefined"});
  expect_every_rank_failed(run([](torch::Tensor x) { return x.reshape({x.size(0), 8, 1, 1, 1, 1, 1, 1, 1}); }),
                           {"stage 0 of 2", "9 dimensions", "at most 8"});
}

TEST(PipelineErrors, AFailureInTheFirstStagesBackwardReachesEveryRank) {
  // Nothing flows from stage 0 to stage 1 after stage 0's last backward: the
  // end-of-step agreement must carry the error.
  auto make = [] {
    namespace nn = torch::nn;
    return nn::Sequential(nn::Linear(8, 8), ThrowInBackward(), nn::Linear(8, 4));
  };
  const PartitionPlan plan = plan_of(3, {0, 2, 3});
  auto errors = rank_errors(2, [&](int, std::shared_ptr<comm::Communicator> comm) {
    Pipeline pipe(make(), plan, comm, pipeline_loss, with(2));
    pipe.step(torch::randn({4, 8}), torch::randint(4, {4}));
  });
  expect_every_rank_failed(errors, {"stage 0 of 2", "backward of micro-batch 0", "backward exploded"});
  EXPECT_NE(errors[1].find("stage 1 of 2 (rank 1 of group 'world', layers 2-2) stopped its step"),
            std::string::npos) << errors[1];
}

TEST(PipelineErrors, RanksThatDisagreeOnOptionsOrSplitFailAtConstruction) {
  auto errors = rank_errors(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    Pipeline pipe(make_pipeline_mlp(), plan_of(7, {0, 3, 7}), comm, pipeline_loss, with(rank == 1 ? 8 : 4));
  });
  expect_every_rank_failed(errors, {"disagree", "rank 1 uses micro_batches=8 schedule=1f1b but rank 0 uses "
                                                "micro_batches=4"});
  errors = rank_errors(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    const auto plan = rank == 0 ? plan_of(7, {0, 3, 7}) : plan_of(7, {0, 2, 7});
    Pipeline pipe(make_pipeline_mlp(), plan, comm, pipeline_loss, with(2));
  });
  expect_every_rank_failed(errors, {"stage 0 ends before layer 3 but stage 1 starts at layer 2"});
}

TEST(PipelineErrors, BroadcastPlanGivesEveryRankTheRootsPlan) {
  // Per-rank profiles differ; the broadcast plan is rank 0's everywhere, and the pipeline accepts it.
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    std::vector<LayerCost> costs(7, LayerCost{"layer", 1.0, 10});
    costs[rank == 0 ? 1 : 5].time_s = 9.0;
    const PartitionPlan local = partition_layers(costs, 2, 100);
    const PartitionPlan plan = broadcast_plan(local, *comm);
    ASSERT_EQ(plan.stages.size(), 2u);
    EXPECT_EQ(plan.stages[0].end, 2);  // rank 0's: the heavy layer 1 ends stage 0
    EXPECT_EQ(plan.stages[1].time_s, 5.0);
    EXPECT_EQ(plan.stages[0].memory_bytes, 20);
    EXPECT_EQ(plan.memory_limit_bytes, 100);
    Pipeline pipe(make_pipeline_mlp(), plan, comm, pipeline_loss, with(2));
    pipe.step(torch::randn({4, 8}), torch::randint(4, {4}));
  });
}

TEST(PipelineErrors, APlanForAnotherStageCountOrModelIsRejected) {
  auto errors = rank_errors(2, [&](int, std::shared_ptr<comm::Communicator> comm) {
    Pipeline pipe(make_pipeline_mlp(), plan_of(7, {0, 2, 5, 7}), comm, pipeline_loss);
  });
  expect_every_rank_failed(errors, {"the plan has 3 stages", "has 2 ranks"});
  errors = rank_errors(2, [&](int, std::shared_ptr<comm::Communicator> comm) {
    Pipeline pipe(make_pipeline_mlp(), plan_of(6, {0, 3, 6}), comm, pipeline_loss);
  });
  expect_every_rank_failed(errors, {"the plan splits 6 layers but the model has 7"});
}

TEST(PipelineErrors, BadBatchesFailOnEveryRankAndTheNextStepWorks) {
  torch::manual_seed(1);
  const torch::Tensor x = torch::randn({8, 8}), y = torch::randint(4, {8});
  std::vector<std::string> too_few(3), no_target(3), not_scalar(3);
  paisoar::testing::run_ranks(3, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto loss_fn = [](const torch::Tensor& out, const torch::Tensor& target) {
      // A per-row loss when the targets are flagged by a negative first class.
      if (target[0].item<int64_t>() < 0) return torch::cross_entropy_loss(out, -target - 1, {}, at::Reduction::None);
      return torch::cross_entropy_loss(out, target);
    };
    Pipeline pipe(make_pipeline_mlp(), plan_of(7, {0, 2, 5, 7}), comm, loss_fn, with(4));
    auto run = [&](const torch::Tensor& in, const torch::Tensor& target, std::string* error) {
      try {
        pipe.step(in, target);
      } catch (const c10::Error& e) {
        *error = e.what_without_backtrace();
      }
    };
    run(x.slice(0, 0, 2), y.slice(0, 0, 2), &too_few[rank]);      // 2 rows, 4 micro-batches
    run(x, rank == 2 ? torch::Tensor() : y, &no_target[rank]);     // the last stage has no target
    run(x, -y - 1, &not_scalar[rank]);                             // loss of shape [2]
    pipe.module()->zero_grad();
    torch::Tensor loss = pipe.step(x, y);                          // and now a good step
    EXPECT_TRUE(std::isfinite(loss.item<double>()));
  });
  expect_every_rank_failed(too_few, {"stage 0 of 3", "the input [2, 8] (Float) has 2 rows",
                                     "fewer than micro_batches = 4"});
  expect_every_rank_failed(no_target, {"stage 2 of 3", "the target is undefined"});
  expect_every_rank_failed(not_scalar, {"stage 2 of 3", "the loss function returned [2]", "one element"});
}
