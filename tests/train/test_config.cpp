// The config: defaults survive a dump and reload, YAML and --set reach the
// fields, and every kind of mistake is named with the key and a way out.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <limits>

#include "paisoar/train/train_config.h"
#include "tests/support/expect_error.h"

using namespace paisoar::train;
using paisoar::testing::expect_error_of;

namespace {

TrainConfig from_yaml(const std::string& text) {
  TrainConfig c;
  schema_for(c).load_yaml(text, "test.yaml");
  return c;
}

}  // namespace

TEST(Config, DumpReloadsToTheSameConfig) {
  TrainConfig c;
  c.optimizer.lr = 0.125;
  c.run_dir = "runs/a \"quoted\" dir";
  c.data.path = "/data: with colon";
  const std::string text = dump_config(c);
  const TrainConfig back = from_yaml(text);
  EXPECT_EQ(dump_config(back), text);
  EXPECT_DOUBLE_EQ(back.optimizer.lr, 0.125);
  EXPECT_EQ(back.run_dir, c.run_dir);
  EXPECT_EQ(back.data.path, c.data.path);
  EXPECT_NE(text.find("optimizer:\n  name: sgd"), std::string::npos) << text;
}

TEST(Config, YamlAndOverridesReachTheFields) {
  auto c = from_yaml("seed: 7\nmodel: {name: fashion_cnn_bn}\noptimizer:\n  lr: 0.2\n  name: lamb\n"
                     "train:\n  batch_size: 256\n  grad_accumulation: 2\namp:\n  dtype: fp32\n");
  EXPECT_EQ(c.seed, 7);
  EXPECT_EQ(c.model.name, "fashion_cnn_bn");
  EXPECT_EQ(c.optimizer.name, "lamb");
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.2);
  EXPECT_EQ(c.train.batch_size, 256);
  EXPECT_EQ(c.amp.dtype, AmpDtype::FP32);
  auto schema = schema_for(c);
  schema.set("optimizer.lr=0.1");
  schema.set("data.augment=true");
  schema.set("distributed.compression=powersgd");
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.1);
  EXPECT_TRUE(c.data.augment);
  EXPECT_EQ(c.distributed.compression, "powersgd");
  // The keys with fixed choices become enums, and are dumped as their YAML names again.
  schema.set("parallel.schedule=gpipe");
  schema.set("schedule.decay=polynomial");
  schema.set("checkpoint.on_error=warn");
  schema.set("data.on_error=skip");
  EXPECT_EQ(c.parallel.schedule, paisoar::pipeline::Schedule::GPipe);
  EXPECT_EQ(c.schedule.decay, DecayShape::Polynomial);
  EXPECT_EQ(c.checkpoint.on_error, OnCheckpointError::Warn);
  EXPECT_EQ(c.data.on_error, OnBadSample::Skip);
  const std::string text = dump_config(c);
  for (const char* line : {"  dtype: fp32  #", "  schedule: gpipe  #", "  decay: polynomial  #", "  on_error: warn  #",
                           "  on_error: skip  #"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
  }
  EXPECT_EQ(dump_config(from_yaml(text)), text);
  expect_error_of<ConfigError>([&] { schema.set("amp.dtype=fp8"); },
                               {"--set amp.dtype", "'fp8' is not one of: auto, bf16, fp16, fp32"});
  EXPECT_EQ(c.amp.dtype, AmpDtype::FP32);
  EXPECT_EQ(from_yaml("").train.epochs, 1);  // an empty file is the defaults
}

TEST(Config, UnknownKeysNameTheClosestValidOne) {
  expect_error_of<ConfigError>([] { from_yaml("optimizer:\n  lrr: 0.1\n"); },
                               {"test.yaml", "unknown key 'optimizer.lrr'", "did you mean 'optimizer.lr'"});
  expect_error_of<ConfigError>([] { from_yaml("optimiser:\n  lr: 0.1\n"); },
                               {"unknown key 'optimiser'", "'optimizer'"});
  expect_error_of<ConfigError>([] { from_yaml("trian: {epochs: 2}\n"); }, {"'train'"});
  TrainConfig c;
  auto schema = schema_for(c);
  expect_error_of<ConfigError>([&] { schema.set("checkpoint.every=5"); },
                               {"unknown key 'checkpoint.every'", "'checkpoint.every_steps'"});
  expect_error_of<ConfigError>([&] { schema.set("optimizer.lr"); }, {"key=value"});
}

TEST(Config, WrongTypesNameTheKeyAndTheTypeExpected) {
  expect_error_of<ConfigError>([] { from_yaml("optimizer: {lr: fast}\n"); },
                               {"optimizer.lr", "expected a number", "'fast'"});
  expect_error_of<ConfigError>([] { from_yaml("train: {epochs: 1.5}\n"); },
                               {"train.epochs", "expected an integer"});
  expect_error_of<ConfigError>([] { from_yaml("data: {augment: maybe}\n"); },
                               {"data.augment", "true or false"});
  expect_error_of<ConfigError>([] { from_yaml("train: {epochs: [1, 2]}\n"); },
                               {"train.epochs", "got a list"});
  expect_error_of<ConfigError>([] { from_yaml("optimizer: 3\n"); }, {"optimizer is a section"});
  expect_error_of<ConfigError>([] { from_yaml("model: {name: alexnet}\n"); },
                               {"model.name", "'alexnet' is not one of", "resnet18"});
  expect_error_of<ConfigError>([] { from_yaml("[1, 2]\n"); }, {"expected a mapping"});
  expect_error_of<ConfigError>([] { from_yaml("a: [1, 2\n"); }, {"not valid YAML"});
  TrainConfig c;
  auto schema = schema_for(c);
  expect_error_of<ConfigError>([&] { schema.set("train.batch_size=abc"); },
                               {"--set train.batch_size", "expected an integer"});
  expect_error_of<ConfigError>([] { from_yaml("amp: {fp32_modules: fc2}\n"); },
                               {"amp.fp32_modules", "expected a list of strings"});
  expect_error_of<ConfigError>([] { from_yaml("amp: {fp32_modules: [[fc2]]}\n"); },
                               {"amp.fp32_modules", "expected a string in the list"});
}

TEST(Config, ListsOfStringsRoundTrip) {
  TrainConfig c;
  auto schema = schema_for(c);
  schema.set("amp.fp32_modules=[fc2, \"layer*\"]");
  EXPECT_EQ(c.amp.fp32_modules, (std::vector<std::string>{"fc2", "layer*"}));
  EXPECT_NE(schema.dump().find("fp32_modules: [fc2, "), std::string::npos) << schema.dump();
  TrainConfig again;
  schema_for(again).load_yaml(schema.dump(), "dump");
  EXPECT_EQ(again.amp.fp32_modules, c.amp.fp32_modules);
}

TEST(Config, ValidationNamesTheKeyAndWhatToUse) {
  TrainConfig c;
  c.train.batch_size = 100;
  c.train.grad_accumulation = 3;
  expect_error_of<ConfigError>([&] { validate(c, 2); },
                               {"train.batch_size", "2 ranks x 3 micro-batches", "multiple of 6"});
  c.train.batch_size = 96;
  validate(c, 2);
  c.optimizer.lr = -1;
  expect_error_of<ConfigError>([&] { validate(c, 2); }, {"optimizer.lr", "positive"});
  c.optimizer.lr = 0.1;
  c.eval.stop_at_target = true;
  expect_error_of<ConfigError>([&] { validate(c, 2); }, {"eval.stop_at_target", "eval.target_accuracy"});
}

TEST(Config, LoadConfigReadsAFileThenOverrides) {
  const std::string path = ::testing::TempDir() + "paisoar_config_test.yaml";
  std::ofstream(path) << "optimizer:\n  lr: 0.3\ntrain:\n  epochs: 4\n";
  const auto c = load_config(path, {"train.epochs=5"});
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.3);
  EXPECT_EQ(c.train.epochs, 5);
  std::remove(path.c_str());
  expect_error_of<ConfigError>([] { load_config("/nonexistent/x.yaml"); },
                               {"/nonexistent/x.yaml", "check the path"});
}

TEST(Config, NumbersOutsideTheirRangeOrNotFiniteAreRefusedWhereRead) {
  expect_error_of<ConfigError>([] { from_yaml("optimizer:\n  lr: .inf\n"); },
                               {"test.yaml", "optimizer.lr", "finite", "got inf"});
  expect_error_of<ConfigError>([] { from_yaml("distributed: {bucket_cap_mb: .nan}\n"); },
                               {"distributed.bucket_cap_mb", "finite"});
  expect_error_of<ConfigError>([] { from_yaml("profiler: {trace_start_step: -5}\n"); },
                               {"profiler.trace_start_step", "-1 (no trace)", "got -5"});
  expect_error_of<ConfigError>([] { from_yaml("model: {hidden: [64, 0]}\n"); }, {"model.hidden", "got 0"});
  TrainConfig c;
  auto schema = schema_for(c);
  expect_error_of<ConfigError>([&] { schema.set("model.num_classes=10000000000000"); },
                               {"--set model.num_classes", "between 1 and 1000000"});
  EXPECT_EQ(c.model.num_classes, TrainConfig{}.model.num_classes) << "a refused value must not be stored";
  expect_error_of<ConfigError>([&] { schema.set("model.hidden=[8, -1]"); }, {"model.hidden"});
  EXPECT_TRUE(c.model.hidden.empty()) << "a refused list must not be stored";
}

TEST(Config, RangesAreCheckedForAConfigBuiltInCode) {
  TrainConfig c;
  validate(c, 2);  // every default lies in its range
  c.distributed.bucket_cap_mb = std::numeric_limits<double>::infinity();
  expect_error_of<ConfigError>([&] { validate(c, 2); }, {"distributed.bucket_cap_mb", "finite"});
  c = TrainConfig{};
  c.run_dir = "";
  expect_error_of<ConfigError>([&] { validate(c, 2); }, {"run_dir", "is empty"});
}

TEST(Config, KeysGivenTwiceOrNotNamesAreRefusedWithTheirLines) {
  expect_error_of<ConfigError>([] { from_yaml("optimizer:\n  lr: 0.1\n  lr: 0.2\n"); },
                               {"test.yaml:3", "'optimizer.lr' is given twice (first on line 2)"});
  expect_error_of<ConfigError>([] { from_yaml("train: {epochs: 1}\noptimizer: {lr: 1}\ntrain: {epochs: 2}\n"); },
                               {"test.yaml:3", "'train' is given twice (first on line 1)"});
  expect_error_of<ConfigError>([] { from_yaml("optimizer:\n  [lr]: 0.1\n"); },
                               {"test.yaml:2", "a key must be a name, got a list", "'optimizer'"});
}

TEST(Config, RangesDescribeThemselves) {
  EXPECT_EQ(at_least(1).describe(), "at least 1");
  EXPECT_EQ(at_least(1, 64).describe(), "between 1 and 64");
  EXPECT_EQ(positive().describe(), "positive");
  EXPECT_EQ(at_least(0, 1, "0 (off) or more").describe(), "0 (off) or more");
  Range half_open = at_least(0, 1);
  half_open.max_open = true;
  EXPECT_EQ(half_open.describe(), "in [0, 1)");
  EXPECT_FALSE(half_open.contains(1));
  EXPECT_FALSE(at_least(0).contains(std::numeric_limits<double>::quiet_NaN()));
}
