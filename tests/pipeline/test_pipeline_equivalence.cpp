// The pipeline executor against the same model run whole in one process: for
// P = 2 and 3 stages, M = 1, 4 and 8 micro-batches and both schedules, the
// loss (on every rank) and every parameter's gradient match the full batch's,
// over two SGD steps; also with micro-batches of unequal size, and as two
// pipelines inside a 2x2 (data x pipe) mesh whose averaged gradients match the
// whole batch. Tolerance: rtol 1e-5, atol 1e-6 (fp32 sums in another order).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "paisoar/comm/device_mesh.h"
#include "paisoar/pipeline.h"
#include "tests/pipeline/pipeline_testing.h"

using namespace paisoar;
using namespace paisoar::pipeline;
using paisoar::testing::expect_grads_match;
using paisoar::testing::make_pipeline_mlp;
using paisoar::testing::pipeline_loss;
using paisoar::testing::reference_step;
using paisoar::testing::seeded_model;

namespace {

constexpr double kRtol = 1e-5, kAtol = 1e-6;
constexpr int kSeed = 11;
constexpr double kLr = 0.1;

PartitionPlan plan_for(int stages) {
  std::vector<LayerCost> unit(7, LayerCost{"", 1.0, 1});
  return stages == 2 ? plan_from_bounds(unit, {0, 3, 7}) : plan_from_bounds(unit, {0, 2, 5, 7});
}

struct Batch {
  torch::Tensor x, y;
};

// One batch per entry of `rows`, of that many rows.
std::vector<Batch> make_batches(const std::vector<int>& rows, int seed) {
  torch::manual_seed(seed);
  std::vector<Batch> out;
  for (int r : rows) out.push_back({torch::randn({r, 8}), torch::randint(4, {r})});
  return out;
}

// Runs a pipeline step with SGD per entry of `rows` (default: two steps of
// `rows` rows) and checks each against the reference.
void expect_pipeline_matches(int stages, int micro_batches, Schedule schedule, int rows,
                             std::vector<int> rows_per_step = {}) {
  if (rows_per_step.empty()) rows_per_step = {rows, rows};
  const auto batches = make_batches(rows_per_step, 5);
  std::mutex mutex;
  auto whole = seeded_model(mutex, make_pipeline_mlp, kSeed);
  torch::optim::SGD whole_opt(whole->parameters(), kLr);
  std::vector<paisoar::testing::Reference> refs;
  for (const auto& b : batches) {
    refs.push_back(reference_step(whole, b.x, b.y));
    whole_opt.step();
  }
  const PartitionPlan plan = plan_for(stages);
  paisoar::testing::run_ranks(stages, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto model = seeded_model(mutex, make_pipeline_mlp, kSeed);
    PipelineOptions options;
    options.micro_batches = micro_batches;
    options.schedule = schedule;
    Pipeline pipe(model, plan, comm, pipeline_loss, options);
    torch::optim::SGD opt(pipe.parameters(), kLr);
    for (size_t s = 0; s < batches.size(); ++s) {
      SCOPED_TRACE("rank " + std::to_string(rank) + " step " + std::to_string(s));
      opt.zero_grad();
      const bool first = pipe.is_first(), last = pipe.is_last();
      torch::Tensor loss = pipe.step(first ? batches[s].x : torch::Tensor(), last ? batches[s].y : torch::Tensor());
      ASSERT_TRUE(loss.defined());
      EXPECT_NEAR(loss.item<double>(), refs[s].loss, kRtol * std::abs(refs[s].loss));
      expect_grads_match(*pipe.module(), refs[s], kRtol, kAtol);
      const int bound = schedule == Schedule::GPipe ? micro_batches : std::min(stages - rank, micro_batches);
      EXPECT_EQ(pipe.last_step().peak_in_flight, bound);
      opt.step();
    }
  });
}

PipelineOptions with_micro_batches(int m) {
  PipelineOptions o;
  o.micro_batches = m;
  return o;
}

struct Case {
  int stages, micro_batches;
  Schedule schedule;
};

class PipelineEquivalence : public ::testing::TestWithParam<Case> {};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return std::string(to_string(info.param.schedule) == std::string("gpipe") ? "GPipe" : "OneFOneB") + "_P" +
         std::to_string(info.param.stages) + "_M" + std::to_string(info.param.micro_batches);
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB}) {
    for (int stages : {2, 3}) {
      for (int m : {1, 4, 8}) cases.push_back({stages, m, schedule});
    }
  }
  return cases;
}

TEST_P(PipelineEquivalence, LossAndGradientsEqualTheWholeModel) {
  const Case c = GetParam();
  expect_pipeline_matches(c.stages, c.micro_batches, c.schedule, 16);
}

INSTANTIATE_TEST_SUITE_P(Schedules, PipelineEquivalence, ::testing::ValuesIn(all_cases()), case_name);

}  // namespace

TEST(PipelineEquivalenceUneven, MicroBatchesOfUnequalSizeAreWeightedByRows) {
  // 10 rows in 4 micro-batches: 3, 3, 2, 2.
  expect_pipeline_matches(3, 4, Schedule::OneFOneB, 10);
  expect_pipeline_matches(2, 4, Schedule::GPipe, 10);
}

TEST(PipelineEquivalenceShapes, BatchesThatChangeSizeBetweenStepsMatchTheWholeModel) {
  // The stages expect each step's messages to look like the last step's (these
  // small ones travel inside the header message); the shapes change (16 rows
  // in 4 micro-batches of 4, then 10 as 3, 3, 2, 2, then 7 as 2, 2, 2, 1) and
  // come back, and every step still equals the whole model.
  const std::vector<int> rows = {16, 16, 10, 16, 7, 7};
  expect_pipeline_matches(3, 4, Schedule::OneFOneB, 0, rows);
  expect_pipeline_matches(2, 4, Schedule::GPipe, 0, rows);
}

TEST(PipelineEquivalenceShapes, LargeActivationsPostedAheadMatchTheWholeModelAroundInference) {
  // 16 rows x 2048 floats (128 KiB) per micro-batch are over the inline limit,
  // so their receives are posted ahead; 10 rows (80 KiB) are too, but of
  // another shape. An infer() between steps uses the same tags.
  auto make = [] {
    namespace nn = torch::nn;
    return nn::Sequential(nn::Linear(8, 2048), nn::Tanh(), nn::Linear(2048, 4));
  };
  const auto batches = make_batches({64, 64, 40, 64}, 3);
  const torch::Tensor probe = torch::randn({24, 8});
  std::mutex mutex;
  auto whole = seeded_model(mutex, make, kSeed);
  torch::optim::SGD whole_opt(whole->parameters(), kLr);
  std::vector<paisoar::testing::Reference> refs;
  std::vector<torch::Tensor> probes;  // the whole model's output on `probe` before each step
  for (const auto& b : batches) {
    {
      torch::NoGradGuard no_grad;
      probes.push_back(whole->forward(probe));
    }
    refs.push_back(reference_step(whole, b.x, b.y));
    whole_opt.step();
  }
  const PartitionPlan plan = plan_from_bounds(std::vector<LayerCost>(3, LayerCost{"", 1.0, 1}), {0, 2, 3});
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    Pipeline pipe(seeded_model(mutex, make, kSeed), plan, comm, pipeline_loss, with_micro_batches(4));
    torch::optim::SGD opt(pipe.parameters(), kLr);
    for (size_t s = 0; s < batches.size(); ++s) {
      SCOPED_TRACE("rank " + std::to_string(rank) + " step " + std::to_string(s));
      torch::Tensor out = pipe.infer(rank == 0 ? probe : torch::Tensor());
      if (rank == 1) EXPECT_TRUE(torch::allclose(out, probes[s], kRtol, kAtol));
      opt.zero_grad();
      torch::Tensor loss = pipe.step(rank == 0 ? batches[s].x : torch::Tensor(), rank == 1 ? batches[s].y : torch::Tensor());
      EXPECT_NEAR(loss.item<double>(), refs[s].loss, kRtol * std::abs(refs[s].loss));
      expect_grads_match(*pipe.module(), refs[s], kRtol, kAtol);
      opt.step();
    }
  });
}

TEST(PipelineEquivalenceMesh, TwoPipelinesAcrossADataDimensionMatchTheWholeBatch) {
  // World 4 = data 2 x pipe 2: ranks {0,1} and {2,3} are pipelines; each takes
  // half the batch, then gradients are averaged across the data dimension.
  constexpr int kRows = 16;
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({kRows, 8}), y = torch::randint(4, {kRows});
  std::mutex mutex;
  const auto ref = reference_step(seeded_model(mutex, make_pipeline_mlp, kSeed), x, y);
  const PartitionPlan plan = plan_for(2);
  paisoar::testing::run_ranks(4, [&](int rank, std::shared_ptr<comm::Communicator> world) {
    comm::DeviceMesh mesh(world, {2, 2}, {"data", "pipe"});
    const int replica = mesh.coordinate()[0];
    auto model = seeded_model(mutex, make_pipeline_mlp, kSeed);
    PipelineOptions options;
    options.micro_batches = 4;
    Pipeline pipe(model, plan, mesh.group("pipe"), pipeline_loss, options);
    const torch::Tensor xs = x.chunk(2)[replica], ys = y.chunk(2)[replica];
    torch::Tensor loss = pipe.step(xs, ys);
    auto data = mesh.group("data");
    torch::Tensor total = loss.clone();
    data->allreduce(total, comm::ReduceOp::Avg).wait();
    EXPECT_NEAR(total.item<double>(), ref.loss, kRtol * ref.loss) << "rank " << rank;
    for (auto& p : pipe.parameters()) data->allreduce(p.mutable_grad(), comm::ReduceOp::Avg).wait();
    expect_grads_match(*pipe.module(), ref, kRtol, kAtol);
  });
}

TEST(PipelineEquivalenceSingle, OneStageIsPlainGradientAccumulation) {
  const auto batches = make_batches({12, 12}, 9);
  std::mutex mutex;
  const auto ref = reference_step(seeded_model(mutex, make_pipeline_mlp, kSeed), batches[0].x, batches[0].y);
  std::vector<LayerCost> unit(7, LayerCost{"", 1.0, 1});
  paisoar::testing::run_ranks(1, [&](int, std::shared_ptr<comm::Communicator> comm) {
    PipelineOptions options;
    options.micro_batches = 3;
    Pipeline pipe(seeded_model(mutex, make_pipeline_mlp, kSeed), partition_layers(unit, 1), comm, pipeline_loss,
                  options);
    torch::Tensor loss = pipe.step(batches[0].x, batches[0].y);
    EXPECT_NEAR(loss.item<double>(), ref.loss, kRtol * ref.loss);
    expect_grads_match(*pipe.module(), ref, kRtol, kAtol);
  });
}

TEST(PipelineEquivalenceFactory, EachRankBuildsOnlyItsLayersAndMatches) {
  namespace nn = torch::nn;
  // Layer i is seeded by its index, so a rank can build it alone.
  auto make_layer = [](int i) -> nn::AnyModule {
    torch::manual_seed(200 + i);
    switch (i) {
      case 0: return nn::AnyModule(nn::Linear(8, 16));
      case 1: return nn::AnyModule(nn::Tanh());
      case 2: return nn::AnyModule(nn::Linear(16, 16));
      case 3: return nn::AnyModule(nn::Tanh());
      default: return nn::AnyModule(nn::Linear(16, 4));
    }
  };
  std::vector<LayerCost> costs(5, LayerCost{"", 1.0, 1});
  const PartitionPlan plan = partition_layers(costs, 3);
  std::mutex mutex;
  nn::Sequential whole;
  for (int i = 0; i < 5; ++i) whole->push_back(std::to_string(i), make_layer(i));
  const auto batches = make_batches({8, 8}, 4);
  const auto ref = reference_step(whole, batches[0].x, batches[0].y);
  paisoar::testing::run_ranks(3, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    std::vector<int> built;
    nn::Sequential stage;
    {
      std::lock_guard<std::mutex> lock(mutex);
      stage = build_stage([&](int i) { built.push_back(i); return make_layer(i); }, plan, rank);
    }
    std::vector<int> want;
    for (int i = plan.stages[rank].begin; i < plan.stages[rank].end; ++i) want.push_back(i);
    EXPECT_EQ(built, want);
    PipelineOptions options;
    options.micro_batches = 4;
    Pipeline pipe(stage, comm, pipeline_loss, options);
    torch::Tensor loss = pipe.step(batches[0].x, batches[0].y);
    EXPECT_NEAR(loss.item<double>(), ref.loss, kRtol * ref.loss);
    expect_grads_match(*pipe.module(), ref, kRtol, kAtol);
  });
}
