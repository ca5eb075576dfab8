// The Trainer's memory options end to end on synthetic blobs with thread-ranks:
// zero.stage 1, 2 and 3 end with the parameters of plain DDP (stage 0) after
// the same steps (SGD-momentum and AdamW, clipping by global norm, with and
// without accumulation); a ZeRO run killed mid-way resumes from its sharded
// checkpoint bit for bit, a run without ZeRO resumes it whole, and one with a
// shard file missing falls back to the checkpoint before; activation_checkpointing gives
// the same parameters as no checkpointing and names a pattern that matches no
// region; the memory table is printed.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <regex>
#include <string>

#include "paisoar/models/fashion_cnn.h"
#include "paisoar/train/trainer.h"
#include "tests/support/expect_error.h"
#include "tests/train/train_support.h"

using namespace paisoar;
using paisoar::testing::expect_close;
using paisoar::testing::expect_error_of;
using paisoar::testing::small_config;
using paisoar::testing::train_with;

namespace {

train::TrainConfig mlp_config(const std::string& optimizer) {
  auto c = small_config();
  c.model.name = "mlp";
  c.optimizer.name = optimizer;
  c.optimizer.lr = optimizer == "adamw" ? 0.002 : 0.05;
  c.optimizer.weight_decay = 0.01;
  c.optimizer.clip_grad_norm = 0.5;  // small enough to clip: the norm is over all shards
  c.train.max_steps = 6;
  c.eval.every_epochs = 0;
  c.profiler.enabled = false;
  return c;
}

std::vector<std::string> shard_dirs(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("zero-", 0) == 0) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

// fp32 sums in another order (reduce-scatter chunks against DDP's bucket
// allreduce): 2e-5 after 6 steps.
TEST(TrainerZero, StagesOneToThreeMatchDdp) {
  for (const std::string optimizer : {"sgd", "adamw"}) {
    for (int64_t accumulation : {1, 2}) {
      auto c = mlp_config(optimizer);
      c.train.grad_accumulation = accumulation;
      const auto ddp = train_with(c, 2).first;
      for (int64_t stage : {1, 2, 3}) {
        SCOPED_TRACE(optimizer + " accumulation " + std::to_string(accumulation) + " stage " +
                     std::to_string(stage));
        c.zero.stage = stage;
        const auto [zero, result] = train_with(c, 2);
        EXPECT_EQ(result.steps, 6);
        expect_close(ddp, zero, 2e-5);
      }
    }
  }
}

// distributed.compression bf16 under ZeRO: the gradients' reduce-scatter
// travels in bf16 (summed in fp32 inside the backend), so the parameters
// differ from the uncompressed run's, but only by bf16's rounding of the
// averaged gradients (within 1e-3 after 6 SGD steps here; 0 would mean the
// compression never happened).
TEST(TrainerZero, Bf16CompressionReduceScattersInBf16) {
  auto c = mlp_config("sgd");
  c.zero.stage = 2;
  const auto plain = train_with(c, 2).first;
  c.distributed.compression = "bf16";
  const auto compressed = train_with(c, 2).first;
  double most = 0;
  for (size_t i = 0; i < plain.size(); ++i) most = std::max(most, (plain[i] - compressed[i]).abs().max().item<double>());
  EXPECT_GT(most, 0.0);
  EXPECT_LT(most, 1e-3);
}

TEST(TrainerZero, ThreeRanksAndOneRankWork) {
  auto c = mlp_config("adamw");
  c.train.batch_size = 48;  // 3 ranks x 16; the mlp's units do not divide by 3 (padding)
  const auto ddp = train_with(c, 3).first;
  c.zero.stage = 2;
  expect_close(ddp, train_with(c, 3).first, 2e-5);
  c.zero.stage = 3;
  expect_close(ddp, train_with(c, 3).first, 2e-5);
  c.zero.stage = 0;
  const auto one = train_with(c, 1).first;
  c.zero.stage = 1;  // saves nothing on 1 rank, and says so
  expect_close(one, train_with(c, 1).first, 1e-6);
}

// Kill at step 7, resume from the sharded step-6 checkpoint: the same
// parameters, bit for bit, as a run that was never stopped; only the shard
// directories of the kept step files remain.
TEST(TrainerZero, ResumeFromShardedCheckpointsIsExact) {
  for (int64_t stage : {2, 3}) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    auto c = mlp_config("adamw");
    c.zero.stage = stage;
    c.train.max_steps = 0;
    c.train.epochs = 2;  // 20 steps
    c.data.augment = true;
    c.checkpoint.every_steps = 3;
    c.checkpoint.keep_last = 2;
    c.checkpoint.resume = true;
    const std::string base = c.run_dir + "_zero_resume" + std::to_string(stage);
    std::filesystem::remove_all(base);
    c.run_dir = base + "/straight";
    const auto straight = train_with(c, 2).first;
    c.run_dir = base + "/crashed";
    EXPECT_THROW(train_with(c, 2, [](int64_t step) {
                   if (step == 7) throw std::runtime_error("simulated crash");
                 }),
                 std::runtime_error);
    const std::string dir = c.run_dir + "/checkpoints";
    EXPECT_EQ(shard_dirs(dir), (std::vector<std::string>{"zero-000000000003", "zero-000000000006"}));
    const auto [resumed, result] = train_with(c, 2);
    EXPECT_NE(result.resumed_from.find("step-000000000006"), std::string::npos) << result.resumed_from;
    EXPECT_EQ(result.global_step, 20);
    ASSERT_EQ(straight.size(), resumed.size());
    for (size_t i = 0; i < straight.size(); ++i) EXPECT_TRUE(torch::equal(straight[i], resumed[i])) << i;
    EXPECT_EQ(shard_dirs(dir), (std::vector<std::string>{"zero-000000000018", "zero-000000000020"}));

    // A run without ZeRO resumes the sharded checkpoint whole: at step 20 of
    // 20 it trains nothing, so its parameters are the shards', bit for bit.
    auto plain = c;
    plain.zero.stage = 0;
    const auto [whole, whole_result] = train_with(plain, 2);
    EXPECT_EQ(whole_result.steps, 0);
    for (size_t i = 0; i < straight.size(); ++i) EXPECT_TRUE(torch::equal(straight[i], whole[i])) << i;
    // A shard file missing: the checkpoint does not match its manifest, and
    // the resume falls back to the one before, naming the file.
    std::filesystem::remove(dir + "/zero-000000000020/zero-1-of-2.safetensors");
    ::testing::internal::CaptureStderr();
    const auto fallback = train_with(c, 2).second;
    const std::string warnings = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(fallback.resumed_from.find("step-000000000018"), std::string::npos) << fallback.resumed_from;
    EXPECT_NE(warnings.find("zero-000000000020/zero-1-of-2.safetensors' is missing"), std::string::npos) << warnings;
    std::filesystem::remove_all(base);
  }
}

TEST(TrainerZero, BadZeroConfigIsAClearError) {
  auto c = mlp_config("sgd");
  c.zero.stage = 4;
  expect_error_of<std::runtime_error>([&] { train_with(c, 1); }, {"zero.stage", "0 (off), 1, 2 or 3"});
  c.zero.stage = 2;
  c.distributed.compression = "int8";
  expect_error_of<std::runtime_error>([&] { train_with(c, 1); },
                                      {"distributed.compression", "int8", "reduce-scatter", "bf16 or fp16"});
  // Stage 3 with a model given without its layers (a user's own model).
  c = mlp_config("sgd");
  c.zero.stage = 3;
  paisoar::testing::run_ranks(1, [&](int, std::shared_ptr<comm::Communicator> comm) {
    auto task = paisoar::testing::synthetic_task(c);
    task = train::TrainTask::of(models::FashionCnn(), task.train_data);
    expect_error_of<train::ConfigError>([&] { train::Trainer(c, comm).fit(task); },
                                        {"zero.stage", "TrainTask::layers", "zero.stage 2"});
  });
}

// Checkpointing every region fashion_cnn marks with a module recomputes the
// same numbers: the parameters after 3 steps are bit for bit those without.
TEST(TrainerCheckpointing, SameParametersAsWithout) {
  auto c = small_config();
  c.train.max_steps = 3;
  c.eval.every_epochs = 0;
  c.profiler.enabled = false;
  const auto plain = train_with(c, 2).first;
  c.activation_checkpointing = {"conv*", "fc1"};
  const auto checkpointed = train_with(c, 2).first;
  ASSERT_EQ(plain.size(), checkpointed.size());
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_TRUE(torch::equal(plain[i], checkpointed[i])) << i;
  c.activation_checkpointing = {"layer*"};
  expect_error_of<std::runtime_error>([&] { train_with(c, 1); },
                                      {"activation_checkpointing", "'layer*'", "conv1, conv2, fc1, fc2"});
  // Under ZeRO-3 a recomputed layer gathers its parameters again: the same numbers again.
  c.activation_checkpointing = {"conv*", "fc1"};
  c.zero.stage = 3;
  const auto gathered = train_with(c, 2).first;
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_LT((plain[i] - gathered[i]).abs().max().item<double>(), 1e-5) << i;  // fp32: sums in another order
  }
}

TEST(TrainerMemory, PrintsTheMemoryTable) {
  auto c = mlp_config("adamw");
  c.zero.stage = 2;
  c.train.max_steps = 2;
  ::testing::internal::CaptureStdout();
  train_with(c, 2);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("memory per rank"), std::string::npos) << out;
  // One row per rank; the table's columns come from memory::format_memory_reports.
  EXPECT_TRUE(std::regex_search(out, std::regex("\n0 +cpu"))) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("\n1 +cpu"))) << out;
}
