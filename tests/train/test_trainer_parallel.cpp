// The Trainer's `parallel:` config: pipeline, tensor and data parallelism
// combined on thread-ranks train the same parameters as one rank does (each
// rank holding its stage's shard), with gradient clipping over the split
// model active; and every bad layout is a ConfigError naming the key.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <mutex>

#include "paisoar/train/config_schema.h"
#include "tests/pipeline/pipeline_testing.h"
#include "tests/train/train_support.h"

namespace paisoar {
namespace {

using paisoar::testing::small_config;

using paisoar::testing::RankRun;
using paisoar::testing::train_ranks;

// Each rank's error from building a Trainer and fitting the zoo's task ("" if none).
std::vector<std::string> fit_errors(const train::TrainConfig& c, int world) {
  return paisoar::testing::rank_errors(world, [&](int, std::shared_ptr<comm::Communicator> comm) {
    train::Trainer trainer(c, comm);
    trainer.fit(paisoar::testing::synthetic_task(c, trainer.tensor_group()));
  });
}

// `full` cut to the shape of `shard`: tensor rank `rank`'s slice along the
// one dimension where they differ (the whole tensor when none does).
torch::Tensor shard_like(const torch::Tensor& full, const torch::Tensor& shard, int rank) {
  for (int64_t d = 0; d < full.dim(); ++d) {
    if (full.size(d) != shard.size(d)) return full.narrow(d, rank * shard.size(d), shard.size(d));
  }
  return full;
}

// Each parameter was trained by exactly data x tensor ranks (the replicas of
// the stage that owns it) and equals the one-rank run's (its shard).
void expect_same_training(const std::vector<RankRun>& runs, const RankRun& reference, int replicas_per_param,
                          int tensor) {
  constexpr double kTol = 1e-4;  // fp32; split sums and allreduces add in other orders
  ASSERT_EQ(runs[0].trained.size(), reference.trained.size());
  for (size_t i = 0; i < reference.trained.size(); ++i) {
    int trained_by = 0;
    for (size_t r = 0; r < runs.size(); ++r) {
      if (torch::equal(runs[r].initial[i], runs[r].trained[i])) continue;
      ++trained_by;
      const auto want = shard_like(reference.trained[i], runs[r].trained[i], static_cast<int>(r) % tensor);
      EXPECT_LT((runs[r].trained[i] - want).abs().max().item<double>(), kTol) << "parameter " << i << " rank " << r;
    }
    EXPECT_EQ(trained_by, replicas_per_param) << "parameter " << i;
  }
  for (const auto& run : runs) {
    EXPECT_NEAR(run.result.accuracy, reference.result.accuracy, 0.51);  // at most one of 200 samples
  }
}

train::TrainConfig parallel_config(const std::string& model) {
  auto c = small_config();
  c.model.name = model;
  c.train.max_steps = 6;
  c.optimizer.clip_grad_norm = 0.5;  // small enough to clip: the norm spans every stage and shard
  return c;
}

struct ParallelCase {
  std::string name;
  std::string model;
  int world;
  std::vector<std::string> sets;
  int replicas_per_param;  // data x tensor
  int tensor;
};

class TrainerParallel : public ::testing::TestWithParam<ParallelCase> {};

TEST_P(TrainerParallel, TrainsTheSameParametersAsOneRank) {
  const ParallelCase& pc = GetParam();
  train::TrainConfig base = parallel_config(pc.model);
  train::ConfigSchema base_schema = train::schema_for(base);
  for (const auto& s : pc.sets) {
    if (s.rfind("model.", 0) == 0) base_schema.set(s);  // the one-rank reference trains the same model
  }
  const auto reference = train_ranks(base, 1);
  train::TrainConfig c = base;
  train::ConfigSchema schema = train::schema_for(c);
  for (const auto& s : pc.sets) schema.set(s);
  const auto runs = train_ranks(c, pc.world);
  expect_same_training(runs, reference[0], pc.replicas_per_param, pc.tensor);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, TrainerParallel,
    ::testing::Values(
        ParallelCase{"Pipeline2xData2_1f1b", "mlp", 4, {"parallel.pipeline=2", "parallel.micro_batches=4"}, 2, 1},
        ParallelCase{"Tensor2xData2", "mlp", 4, {"parallel.tensor=2"}, 4, 2},
        ParallelCase{"Pipeline2xTensor2_gpipe", "mlp", 4,
                     {"parallel.pipeline=2", "parallel.tensor=2", "parallel.micro_batches=2", "parallel.schedule=gpipe"},
                     2, 2},
        ParallelCase{"Pipeline2xData2_Zero2", "mlp", 4,
                     {"parallel.pipeline=2", "parallel.micro_batches=2", "zero.stage=2"}, 2, 1},
        ParallelCase{"Pipeline2_FashionCnn", "fashion_cnn", 2, {"parallel.pipeline=2", "parallel.micro_batches=4"}, 1,
                     1},
        // Two tensor-parallel blocks and the head cut over two stages (configs/fashion_mnist_hybrid.yaml's shape).
        ParallelCase{"Pipeline2xTensor2_DeepMlp", "mlp", 4,
                     {"model.hidden=[48, 32, 40, 24]", "parallel.pipeline=2", "parallel.tensor=2",
                      "parallel.micro_batches=4"},
                     2, 2}),
    [](const ::testing::TestParamInfo<ParallelCase>& info) { return info.param.name; });

// A pipelined run books each stage's backward and waits in the step profile
// (before, the whole pipeline call counted as forward) and ends with a table
// of every stage and the measured bubble beside (P-1)/(M+P-1).
TEST(TrainerParallelProfile, APipelinedRunReportsEachStageAndTheBubble) {
  train::TrainConfig c = parallel_config("mlp");
  train::ConfigSchema schema = train::schema_for(c);
  for (const char* s : {"model.hidden=[64, 64, 64, 64]", "parallel.pipeline=2", "parallel.micro_batches=4"}) {
    schema.set(s);
  }
  ::testing::internal::CaptureStdout();
  const auto runs = train_ranks(c, 2);
  const std::string out = ::testing::internal::GetCapturedStdout();
  for (const auto& run : runs) {
    EXPECT_GT(run.result.pipeline_bubble, 0.0);  // stage 0 waits for the first backward: never zero
    EXPECT_LT(run.result.pipeline_bubble, 1.0);
    EXPECT_EQ(run.result.pipeline_bubble, runs[0].result.pipeline_bubble);  // one gather, the same figure
  }
  EXPECT_NE(out.find("pipeline per stage (1f1b, 2 stages, 4 micro-batches"), std::string::npos) << out;
  EXPECT_NE(out.find("(P-1)/(M+P-1) = 20.0%"), std::string::npos) << out;
  // The profile's backward row is no longer empty under a pipeline.
  const size_t backward = out.find("\n  backward");
  ASSERT_NE(backward, std::string::npos) << out;
  EXPECT_GT(std::stod(out.substr(backward + std::string("\n  backward").size())), 0.0) << out;
}

// Without a pipeline there is no bubble to report.
TEST(TrainerParallelProfile, NoPipelineNoBubble) {
  train::TrainConfig c = parallel_config("mlp");
  c.parallel.tensor = 2;
  const auto runs = train_ranks(c, 2);
  EXPECT_EQ(runs[0].result.pipeline_bubble, -1.0);
}

std::vector<std::string> parts_dirs(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("parts-", 0) == 0) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A model-parallel run killed after step 7 resumes from step 6's checkpoint
// (every stage's and shard's part) and ends bit for bit where an
// uninterrupted run ends; a run without model parallelism resumes from the
// parts too.
TEST(TrainerParallelCheckpoint, KilledRunResumesExactly) {
  for (const std::vector<std::string>& sets :
       {std::vector<std::string>{"parallel.pipeline=2", "parallel.tensor=2", "parallel.micro_batches=2"},
        std::vector<std::string>{"parallel.pipeline=2", "parallel.micro_batches=4", "zero.stage=2"}}) {
    SCOPED_TRACE(sets[1]);
    auto c = parallel_config("mlp");
    c.optimizer.name = "adamw";
    c.optimizer.lr = 0.002;
    c.train.max_steps = 0;
    c.train.epochs = 2;  // 20 steps
    c.data.augment = true;
    c.checkpoint.every_steps = 3;
    c.checkpoint.keep_last = 2;
    c.checkpoint.resume = true;
    train::ConfigSchema schema = train::schema_for(c);
    for (const auto& s : sets) schema.set(s);
    const std::string base = c.run_dir + "_parallel_resume";
    std::filesystem::remove_all(base);
    c.run_dir = base + "/straight";
    const auto straight = train_ranks(c, 4);
    c.run_dir = base + "/crashed";
    EXPECT_THROW(train_ranks(c, 4, [](int64_t step) {
                   if (step == 7) throw std::runtime_error("simulated crash");
                 }),
                 std::runtime_error);
    const std::string dir = c.run_dir + "/checkpoints";
    EXPECT_EQ(parts_dirs(dir), (std::vector<std::string>{"parts-000000000003", "parts-000000000006"}));
    const auto resumed = train_ranks(c, 4);
    for (int r = 0; r < 4; ++r) {
      EXPECT_NE(resumed[r].result.resumed_from.find("step-000000000006"), std::string::npos);
      EXPECT_EQ(resumed[r].result.global_step, 20);
      ASSERT_EQ(straight[r].trained.size(), resumed[r].trained.size());
      for (size_t i = 0; i < straight[r].trained.size(); ++i) {
        EXPECT_TRUE(torch::equal(straight[r].trained[i], resumed[r].trained[i])) << "rank " << r << " parameter " << i;
      }
    }
    EXPECT_EQ(parts_dirs(dir), (std::vector<std::string>{"parts-000000000018", "parts-000000000020"}));

    // A run without model parallelism joins the stages and the tensor
    // shards (test_trainer_reshard checks the numbers).
    auto other = c;
    other.parallel = train::ParallelConfig{};
    other.zero.stage = 0;
    for (const auto& e : fit_errors(other, 4)) EXPECT_EQ(e, "");
    std::filesystem::remove_all(base);
  }
}

void expect_config_error(const train::TrainConfig& c, int64_t world, const std::string& key, const std::string& part) {
  try {
    train::validate(c, world);
    ADD_FAILURE() << "expected a ConfigError naming " << key;
  } catch (const train::ConfigError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(key + ":", 0), 0u) << message;
    EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

TEST(TrainerParallelConfig, BadLayoutsAreConfigErrorsNamingTheKey) {
  auto c = parallel_config("mlp");
  c.parallel.pipeline = 3;
  expect_config_error(c, 4, "parallel", "data 1 x pipeline 3 x tensor 1 = 3 ranks, but the world has 4");
  c.parallel.pipeline = 2;
  c.parallel.data = 1;
  expect_config_error(c, 4, "parallel", "data 1 x pipeline 2 x tensor 1 = 2 ranks, but the world has 4");
  c.parallel.data = 0;
  c.train.grad_accumulation = 2;
  expect_config_error(c, 4, "train.grad_accumulation", "set parallel.micro_batches instead");
  c.train.grad_accumulation = 1;
  c.parallel.micro_batches = 3;
  expect_config_error(c, 4, "train.batch_size", "2 data-parallel replicas x 3 micro-batches");
  c.parallel.micro_batches = 2;
  c.zero.stage = 3;  // composes with the pipeline (tests/train/test_layout_matrix.cpp)
  EXPECT_NO_THROW(train::validate(c, 4));
  c.zero.stage = 0;
  c.parallel.pipeline = 1;
  expect_config_error(c, 4, "parallel.micro_batches", "needs parallel.pipeline > 1");
  c.parallel.micro_batches = 1;
  EXPECT_NO_THROW(train::validate(c, 4));
}

TEST(TrainerParallelConfig, ModelsThatCannotBeSplitAreRefusedOnEveryRank) {
  auto c = parallel_config("mlp");
  c.parallel.pipeline = 4;  // the mlp has 3 layers
  auto errors = fit_errors(c, 4);
  paisoar::testing::expect_every_rank_failed(
      errors, {"parallel.pipeline: 4 stages, but mlp has 3 layers", "use parallel.pipeline 3 or fewer"});
  c.parallel.pipeline = 1;
  c.parallel.tensor = 3;  // fashion_cnn's fc1 has 128 units
  c.model.name = "fashion_cnn";
  errors = fit_errors(c, 3);
  paisoar::testing::expect_every_rank_failed(errors, {"parallel.tensor: 3", "fashion_cnn", "parallel.tensor 2"});
}

}  // namespace
}  // namespace paisoar

namespace paisoar {
namespace {

// Every rank builds the whole model, then keeps its stage's layers only: the
// other stages' parameters hold no memory, and the stages together hold the
// model once.
TEST(TrainerParallelMemory, AStageHoldsOnlyItsOwnLayers) {
  auto c = parallel_config("mlp");
  c.parallel.pipeline = 2;
  c.parallel.micro_batches = 2;
  c.train.max_steps = 2;
  std::vector<int64_t> held(2, 0);
  int64_t whole = 0;
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    train::Trainer trainer(c, comm);
    train::TrainTask task;
    {
      static std::mutex build;
      std::lock_guard<std::mutex> lock(build);
      task = paisoar::testing::synthetic_task(c, trainer.tensor_group());
    }
    int64_t all = 0;
    for (const auto& p : task.model->parameters()) all += p.numel() * p.element_size();
    trainer.fit(task);
    for (const auto& p : task.model->parameters()) held[static_cast<size_t>(rank)] += p.storage().nbytes();
    if (rank == 0) whole = all;
  });
  EXPECT_GT(held[0], 0);
  EXPECT_GT(held[1], 0);
  EXPECT_EQ(held[0] + held[1], whole);
}

}  // namespace
}  // namespace paisoar
