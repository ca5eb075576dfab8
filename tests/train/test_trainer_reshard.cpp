// Resuming on another layout, end to end with thread-ranks: a run stopped at
// step 8 resumes from its step-6 checkpoint on another number of ranks or
// another ZeRO stage or model-parallel split, with the same global batch, and continues the run that
// was never stopped: the same samples at every step (the loader's position is
// saved in samples; checked on the inputs the model was fed), the same logged loss at every step (the epoch's running mean over
// all ranks, carried by the checkpoint) and the same parameters at the end,
// within fp32 reduction-order tolerance (other ranks sum in another order,
// ZeRO reduce-scatters where DDP allreduces). A resume with another
// train.batch_size is refused, naming the file and the key.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "paisoar/train/trainer.h"
#include "tests/support/expect_error.h"
#include "tests/train/train_support.h"

using namespace paisoar;
using paisoar::testing::expect_close;
using paisoar::testing::expect_error_of;
using paisoar::testing::small_config;
using paisoar::testing::train_with;

namespace {

struct Layout {
  int ranks;
  int64_t zero_stage;
  int64_t pipeline = 1;
  int64_t tensor = 1;
  std::string name() const {
    return std::to_string(ranks) + " ranks, zero.stage " + std::to_string(zero_stage) + ", pipeline " +
           std::to_string(pipeline) + ", tensor " + std::to_string(tensor);
  }
};

train::TrainConfig reshard_config(const std::string& run_dir, const Layout& layout) {
  auto c = small_config();
  c.run_dir = run_dir;
  c.model.name = "mlp";
  c.memory.predict = false;  // its probe's forward would be recorded as a step's input (InputsSeen)
  c.optimizer.name = "adamw";
  c.optimizer.lr = 0.002;
  c.optimizer.weight_decay = 0.01;
  c.train.epochs = 2;  // 10 steps of 64 samples per epoch on any number of ranks
  c.train.log_every = 1;
  c.eval.every_epochs = 0;
  c.profiler.enabled = false;
  c.checkpoint.every_steps = 3;
  c.checkpoint.resume = true;
  c.zero.stage = layout.zero_stage;
  c.parallel.pipeline = layout.pipeline;
  c.parallel.tensor = layout.tensor;
  if (layout.pipeline > 1) c.parallel.micro_batches = 4;
  return c;
}

// Every rank's result of fitting the zoo's task on `world` thread-ranks
// (any parallel: layout; `on_step` as TrainTask's).
std::vector<train::TrainResult> fit_ranks(const train::TrainConfig& c, int world,
                                          std::function<void(int64_t)> on_step = nullptr) {
  std::vector<train::TrainResult> results;
  for (auto& run : paisoar::testing::train_ranks(c, world, std::move(on_step))) results.push_back(run.result);
  return results;
}

// What the model was fed at each step, over all ranks: every input row's
// bytes, hashed, sorted. Equal lists mean the same samples, with the same
// augmentation, in the same steps (a sample id is not in the inputs; its
// bytes identify it and its augmentation together).
class InputsSeen {
 public:
  // Wraps the task's forward (records its rows) and on_step (files them).
  void watch(int rank, train::TrainTask& task) {
    task.forward = [this, rank, forward = task.forward](const torch::Tensor& x) {
      const torch::Tensor rows = x.detach().to(torch::kCPU).contiguous().reshape({x.size(0), -1});
      {  // not held across forward: ZeRO-3's forward gathers from the other ranks
        std::lock_guard<std::mutex> lock(mutex_);
        for (int64_t i = 0; i < rows.size(0); ++i) {
          const auto row = rows[i];
          pending_[rank].push_back(std::hash<std::string_view>()(
              std::string_view(static_cast<const char*>(row.data_ptr()), row.nbytes())));
        }
      }
      return forward(x);
    };
    task.on_step = [this, rank, on_step = task.on_step](int64_t step) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        auto& seen = by_step_[step];
        seen.insert(seen.end(), pending_[rank].begin(), pending_[rank].end());
        std::sort(seen.begin(), seen.end());
        pending_[rank].clear();
      }
      if (on_step) on_step(step);
    };
  }
  const std::map<int64_t, std::vector<size_t>>& by_step() const { return by_step_; }

 private:
  std::mutex mutex_;
  std::map<int, std::vector<size_t>> pending_;
  std::map<int64_t, std::vector<size_t>> by_step_;
};

// The logged loss of each step in run_dir/metrics.jsonl (a resumed run's
// records follow the stopped one's: the last record of a step wins).
std::map<int64_t, double> logged_losses(const std::string& run_dir) {
  std::map<int64_t, double> out;
  std::ifstream in(run_dir + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto record = nlohmann::json::parse(line);
    if (record.contains("loss") && record.contains("step")) out[record.at("step")] = record.at("loss");
  }
  return out;
}

// `straight`: the uninterrupted run's layout (`before` unless a pipeline's
// ranks hold different stages, which train_with cannot compare).
void expect_resume_continues(const Layout& before, const Layout& after, double tolerance,
                             std::optional<Layout> straight_layout = std::nullopt) {
  SCOPED_TRACE(before.name() + " -> " + after.name());
  const std::string base = ::testing::TempDir() + "paisoar_reshard_" + std::to_string(::getpid());
  std::filesystem::remove_all(base);
  const Layout reference = straight_layout.value_or(before);
  const auto straight_config = reshard_config(base + "/straight", reference);
  InputsSeen straight_inputs, resumed_inputs;
  const auto straight = train_with(straight_config, reference.ranks, nullptr, paisoar::testing::DataSource::Synthetic,
                                   [&](int rank, train::TrainTask& task) { straight_inputs.watch(rank, task); })
                            .first;

  const auto stopped_config = reshard_config(base + "/resumed", before);
  expect_error_of<std::runtime_error>([&] {
    fit_ranks(stopped_config, before.ranks, [](int64_t step) {
      if (step == 8) throw std::runtime_error("simulated crash");
    });
  }, {"simulated crash"});
  if (after.pipeline == 1 && after.tensor == 1) {
    const auto [resumed, result] =
        train_with(reshard_config(base + "/resumed", after), after.ranks, nullptr,
                   paisoar::testing::DataSource::Synthetic,
                   [&](int rank, train::TrainTask& task) { resumed_inputs.watch(rank, task); });
    EXPECT_NE(result.resumed_from.find("step-000000000006"), std::string::npos) << result.resumed_from;
    EXPECT_EQ(result.global_step, 20);
    expect_close(straight, resumed, tolerance);
    // The same samples at every step after the resume (steps 7..20).
    ASSERT_EQ(resumed_inputs.by_step().size(), 14u);
    for (const auto& [step, rows] : resumed_inputs.by_step()) {
      ASSERT_TRUE(straight_inputs.by_step().count(step)) << "step " << step;
      EXPECT_EQ(rows.size(), 64u) << "step " << step;
      EXPECT_TRUE(rows == straight_inputs.by_step().at(step)) << "step " << step << " was fed other samples";
    }
  } else {  // each rank trains its part only: the logged loss (below) speaks for all of them
    const auto results = fit_ranks(reshard_config(base + "/resumed", after), after.ranks);
    for (const auto& r : results) {
      EXPECT_NE(r.resumed_from.find("step-000000000006"), std::string::npos) << r.resumed_from;
      EXPECT_EQ(r.global_step, 20);
    }
  }

  const auto want = logged_losses(base + "/straight");
  const auto got = logged_losses(base + "/resumed");
  ASSERT_EQ(want.size(), 20u);
  for (int64_t step = 7; step <= 20; ++step) {
    ASSERT_TRUE(got.count(step)) << "step " << step << " not logged";
    EXPECT_NEAR(got.at(step), want.at(step), 1e-5 * std::abs(want.at(step)) + 1e-6) << "step " << step;
  }
  std::filesystem::remove_all(base);
}

}  // namespace

TEST(TrainerReshard, TwoRanksResumeOnFour) { expect_resume_continues({2, 0}, {4, 0}, 5e-5); }

TEST(TrainerReshard, DdpResumesUnderZeroTwoOnFourRanks) { expect_resume_continues({2, 0}, {4, 2}, 5e-5); }

TEST(TrainerReshard, ZeroThreeResumesWithoutZeroOnOneRank) { expect_resume_continues({2, 3}, {1, 0}, 5e-5); }

// A pipeline's stages keep the model's parameter names: its parts join into
// the whole model. The uninterrupted reference runs without a pipeline (the
// pipeline trains the same numbers: test_layout_matrix).
TEST(TrainerReshard, TwoStagePipelineResumesWithoutOne) {
  expect_resume_continues({2, 0, 2}, {1, 0}, 1e-4, Layout{1, 0});
}

// Into a pipeline: a 2-rank DDP checkpoint resumed as a 2-stage pipeline
// (each stage cut from the whole model), and a 2-stage pipeline's as 3
// stages (the mlp's three layers, one each); the reference runs without one.
TEST(TrainerReshard, DdpResumesAsATwoStagePipeline) {
  expect_resume_continues({2, 0}, {2, 0, 2}, 1e-4, Layout{1, 0});
}

TEST(TrainerReshard, TwoStagesResumeAsThree) {
  expect_resume_continues({2, 0, 2}, {3, 0, 3}, 1e-4, Layout{1, 0});
}

// Tensor-parallel shards: a 2-way split joined for a run without one, a
// DDP checkpoint cut for a 2-way split, and 2 stages x 2 shards resharded as
// one stage of 4 shards. The uninterrupted reference runs on one rank.
TEST(TrainerReshard, TensorParallelResumesWithoutIt) {
  expect_resume_continues({2, 0, 1, 2}, {1, 0}, 1e-4, Layout{1, 0});
}

TEST(TrainerReshard, DdpResumesAsTensorParallel) {
  expect_resume_continues({2, 0}, {2, 0, 1, 2}, 1e-4, Layout{1, 0});
}

TEST(TrainerReshard, TwoStagesOfTwoShardsResumeAsFourShards) {
  expect_resume_continues({4, 0, 2, 2}, {4, 0, 1, 4}, 1e-4, Layout{1, 0});
}

// Composed layouts, both ways: DDP into ZeRO-3 inside a 2-stage pipeline
// over 2 data ranks, and 2 stages x 2 tensor shards out into one rank.
TEST(TrainerReshard, DdpResumesAsZeroThreeInATwoStagePipeline) {
  expect_resume_continues({2, 0}, {4, 3, 2}, 1e-4, Layout{1, 0});
}

TEST(TrainerReshard, TwoStagesOfTwoShardsResumeOnOneRank) {
  expect_resume_continues({4, 0, 2, 2}, {1, 0}, 1e-4, Layout{1, 0});
}

TEST(TrainerReshard, TensorTwoByDataTwoResumesAsDdpOnFour) {
  expect_resume_continues({4, 0, 1, 2}, {4, 0}, 1e-4, Layout{1, 0});
}

TEST(TrainerReshard, ZeroThreeInAPipelineResumesAsTensorParallel) {
  expect_resume_continues({4, 3, 2}, {2, 1, 1, 2}, 1e-4, Layout{1, 0});
}

// Each stage reads only its own part: a damaged part of stage 1 must make
// every rank fall back to the checkpoint before, together.
TEST(TrainerReshard, ADamagedPartMakesEveryRankFallBackTogether) {
  const std::string base = ::testing::TempDir() + "paisoar_reshard_part_" + std::to_string(::getpid());
  std::filesystem::remove_all(base);
  auto c = reshard_config(base, {2, 0, 2});
  c.train.max_steps = 6;
  fit_ranks(c, 2);
  const std::string part = base + "/checkpoints/parts-000000000006/p1-t0/part.safetensors";
  {
    std::fstream f(part, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-5, std::ios::end);
    const char byte = static_cast<char>(f.get() ^ 0x01);
    f.seekp(-5, std::ios::end);
    f.put(byte);
  }
  c.train.max_steps = 8;
  ::testing::internal::CaptureStderr();
  const auto results = fit_ranks(c, 2);
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  for (const auto& r : results) {
    EXPECT_NE(r.resumed_from.find("step-000000000003"), std::string::npos) << r.resumed_from;
    EXPECT_EQ(r.global_step, 8);
  }
  EXPECT_NE(warnings.find("p1-t0/part.safetensors"), std::string::npos) << warnings;
  std::filesystem::remove_all(base);
}

// A checkpoint whose tensors do not map onto this run's model and layout
// (the same config, a model built otherwise: a user's changed model code) is
// refused on every rank, naming the tensor and both layouts; the checkpoint
// stays usable by its own. A changed model.* setting is refused before that,
// by name (below).
TEST(TrainerReshard, ACheckpointThatDoesNotMapIsRefusedNamingTheTensorAndBothLayouts) {
  const std::string base = ::testing::TempDir() + "paisoar_reshard_map_" + std::to_string(::getpid());
  std::filesystem::remove_all(base);
  auto c = reshard_config(base, {2, 0});
  c.model.hidden = {48, 32};
  c.train.max_steps = 3;
  fit_ranks(c, 2);
  c.parallel.tensor = 2;
  c.train.max_steps = 6;
  auto other_model = c;
  other_model.model.hidden = {48, 48};
  const auto errors = paisoar::testing::rank_errors(2, [&](int, std::shared_ptr<comm::Communicator> comm) {
    train::Trainer trainer(c, comm);
    trainer.fit(paisoar::testing::synthetic_task(other_model, trainer.tensor_group()));
  });
  for (const auto& e : errors) {
    for (const char* word : {"cannot resume from", "step-000000000003", "whole, in the step file",
                             "this run: pipeline 1 x tensor 2", "hidden.1.weight"}) {
      EXPECT_NE(e.find(word), std::string::npos) << word << " not in: " << e;
    }
  }
  c.parallel.tensor = 1;  // its own layout resumes it
  for (const auto& r : fit_ranks(c, 2)) EXPECT_NE(r.resumed_from.find("step-000000000003"), std::string::npos);
  std::filesystem::remove_all(base);
}

// A setting that fixes the samples or the model, changed since the
// checkpoint, is named with both values, the file and what to do; changes a
// resume takes are listed beside it.
TEST(TrainerReshard, AChangedSettingAResumeCannotTakeIsNamed) {
  const std::string base = ::testing::TempDir() + "paisoar_reshard_changed_" + std::to_string(::getpid());
  std::filesystem::remove_all(base);
  auto c = reshard_config(base, {2, 0});
  c.train.max_steps = 3;
  train_with(c, 2);
  c.train.max_steps = 6;
  c.data.train_limit = 320;
  c.optimizer.lr = 0.001;
  expect_error_of<std::runtime_error>([&] { train_with(c, 2); },
                                      {"step-000000000003.safetensors", "settings a resume cannot take",
                                       "data.train_limit 640 there, 320 now", "Set them back",
                                       "these changed too: optimizer.lr"});
  std::filesystem::remove_all(base);
}

TEST(TrainerReshard, AnotherBatchSizeIsRefused) {
  const std::string base = ::testing::TempDir() + "paisoar_reshard_batch_" + std::to_string(::getpid());
  std::filesystem::remove_all(base);
  auto c = reshard_config(base, {2, 0});
  c.train.max_steps = 3;
  train_with(c, 2);
  c.train.max_steps = 6;
  c.train.batch_size = 32;
  expect_error_of<std::runtime_error>([&] { train_with(c, 2); },
                                      {"step-000000000003.safetensors", "settings a resume cannot take",
                                       "train.batch_size 64 there, 32 now", "Set them back"});
  std::filesystem::remove_all(base);
}
