// logging.tensorboard: a Trainer run writes one event file (rank 0's) whose
// scalars TensorBoard's own reader finds at the logged steps, with the values
// metrics.jsonl holds for the same steps.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include "tests/support/python.h"
#include "tests/train/train_support.h"

namespace paisoar::testing {
namespace {

TEST(TrainerTensorBoard, ScalarsMatchTheMetricsFileStepByStep) {
  auto c = small_config();
  c.run_dir += "_tensorboard";
  std::filesystem::remove_all(c.run_dir);
  c.logging.tensorboard = "true";
  c.train.epochs = 2;  // 5 steps each on 2 ranks
  c.train.log_every = 2;
  c.eval.every_steps = 4;
  c.optimizer.clip_grad_norm = 1000;  // far above the norm: reported, never clipped
  train_with(c, 2);

  const std::string dir = c.run_dir + "/tensorboard";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files += entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0;
  EXPECT_EQ(files, 1) << "rank 0 alone writes";

  std::map<int64_t, double> loss, accuracy;
  std::ifstream metrics(c.run_dir + "/metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record.contains("loss")) loss[record.at("step")] = record.at("loss");
    if (record.contains("accuracy")) accuracy[record.at("step")] = record.at("accuracy");
  }
  const std::string peer = std::string(PAISOAR_FORMAT_TEST_DIR) + "/tensorboard_peer.py";
  const auto got = nlohmann::json::parse(run_python(peer + " " + dir));
  std::filesystem::remove_all(c.run_dir);

  for (const char* tag : {"train/loss", "train/lr", "train/samples_per_s", "step/ms_per_step", "step/data_wait_ms",
                          "step/backward_ms", "step/exposed_comm_ms", "amp/loss_scale", "train/grad_norm",
                          "eval/accuracy", "phase/forward_ms", "phase/backward_ms", "phase/optimizer_ms",
                          "phase/data_wait_ms", "rank/step_ms/0", "rank/step_ms/1", "rank/busy_ms/1",
                          "rank/busy_spread", "memory/resident_mb/0", "memory/resident_mb/1"}) {
    EXPECT_TRUE(got.contains(tag)) << tag << " missing from " << got.dump();
  }
  ASSERT_FALSE(loss.empty());
  ASSERT_EQ(got["train/loss"].size(), loss.size());
  size_t i = 0;
  for (const auto& [step, value] : loss) {
    EXPECT_EQ(got["train/loss"][i][0].get<int64_t>(), step);
    EXPECT_FLOAT_EQ(got["train/loss"][i][1].get<float>(), static_cast<float>(value)) << "step " << step;
    ++i;
  }
  for (const auto& point : got["train/grad_norm"]) EXPECT_GT(point[1].get<double>(), 0);
  ASSERT_EQ(got["eval/accuracy"].size(), accuracy.size());
  i = 0;
  for (const auto& [step, value] : accuracy) {
    EXPECT_EQ(got["eval/accuracy"][i][0].get<int64_t>(), step);
    EXPECT_FLOAT_EQ(got["eval/accuracy"][i][1].get<float>(), static_cast<float>(value));
    ++i;
  }
}

// The norm logged without clipping is the one clipping measures: a clip far
// above it changes nothing, so both runs log the same norms step by step.
TEST(TrainerTensorBoard, GradNormIsLoggedWithoutClippingAsClippingMeasuresIt) {
  const auto norms = [](double clip) {
    auto c = small_config();
    c.run_dir += "_grad_norm";
    std::filesystem::remove_all(c.run_dir);
    c.train.log_every = 1;
    c.optimizer.clip_grad_norm = clip;
    train_with(c, 2);
    std::vector<double> out;
    std::ifstream metrics(c.run_dir + "/metrics.jsonl");
    for (std::string line; std::getline(metrics, line);) {
      const auto record = nlohmann::json::parse(line);
      if (record.contains("loss")) out.push_back(record.at("grad_norm"));
    }
    std::filesystem::remove_all(c.run_dir);
    return out;
  };
  const auto measured = norms(0), clipped = norms(1e9);
  ASSERT_EQ(measured.size(), 10u);  // 10 steps on 2 ranks, each logged
  ASSERT_EQ(measured.size(), clipped.size());
  for (size_t i = 0; i < measured.size(); ++i) {
    EXPECT_GT(measured[i], 0);
    EXPECT_NEAR(measured[i], clipped[i], 1e-6 * clipped[i]) << "logged step " << i;
  }
}

TEST(TrainerTensorBoard, FalseAndEmptyWriteNothing) {
  train::LoggingConfig off;
  EXPECT_EQ(off.tensorboard_dir("runs/x"), "");
  off.tensorboard = "false";
  EXPECT_EQ(off.tensorboard_dir("runs/x"), "");
  off.tensorboard = "true";
  EXPECT_EQ(off.tensorboard_dir("runs/x"), "runs/x/tensorboard");
  off.tensorboard = "/tmp/tb";
  EXPECT_EQ(off.tensorboard_dir("runs/x"), "/tmp/tb");
}

}  // namespace
}  // namespace paisoar::testing
