// read_run against metrics files written by hand: torn lines, a resumed run
// overlapping the killed one, two configs in one file, and the errors.
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/stat.h>

#include "src/report/run_history.h"

namespace paisoar::report {
namespace {

namespace fs = std::filesystem;

class RunHistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "paisoar_run_history_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& text) { std::ofstream(dir_ + "/metrics.jsonl") << text; }
  std::string dir_;
};

std::string step(int s, double loss) {
  return "{\"step\":" + std::to_string(s) + ",\"loss\":" + std::to_string(loss) + ",\"lr\":0.1}\n";
}

std::string start(int s, const std::string& config) {
  return "{\"event\":\"run_start\",\"step\":" + std::to_string(s) + ",\"world_size\":2,\"time\":1.0,\"config\":\"" +
         config + "\"}\n";
}

TEST_F(RunHistoryTest, ReadsStepsEvaluationsAndAdviceInStepOrder) {
  write(start(0, "a: 1") + step(20, 2.0) + step(10, 3.0) + "{\"step\":20,\"accuracy\":50.5,\"epoch\":0}\n" +
        "{\"event\":\"advice\",\"step\":20,\"advice\":[{\"verdict\":\"data-bound\",\"evidence\":\"e\",\"action\":"
        "\"x\"}]}\n");
  const RunHistory run = read_run(dir_);
  ASSERT_EQ(run.steps.size(), 2u);
  EXPECT_EQ(number_at(run.steps[0], "step"), 10);
  EXPECT_EQ(number_at(run.steps[1], "loss"), 2.0);
  ASSERT_EQ(run.evals.size(), 1u);
  EXPECT_EQ(number_at(run.evals[0], "accuracy"), 50.5);
  ASSERT_EQ(run.advice.size(), 1u);
  EXPECT_EQ(run.advice[0].verdict, "data-bound");
  EXPECT_TRUE(run.advised);
  ASSERT_EQ(run.starts.size(), 1u);
  EXPECT_EQ(run.starts[0].world_size, 2);
  EXPECT_EQ(run.starts[0].config, "a: 1");
  EXPECT_TRUE(run.warnings.empty());
  EXPECT_EQ(run.name, fs::path(dir_).filename().string());
}

TEST_F(RunHistoryTest, ATornLineIsSkippedWithAWarningNamingItsLine) {
  write(start(0, "a") + step(10, 3.0) + "{\"step\":20,\"loss\":2.\n" + step(30, 1.0));
  const RunHistory run = read_run(dir_);
  ASSERT_EQ(run.steps.size(), 2u);
  EXPECT_EQ(number_at(run.steps[1], "step"), 30);
  ASSERT_EQ(run.warnings.size(), 1u);
  EXPECT_NE(run.warnings[0].find("metrics.jsonl:3: a torn"), std::string::npos) << run.warnings[0];
}

TEST_F(RunHistoryTest, AResumedRunReplacesTheKilledRunsStepsPastItsStart) {
  // Killed after step 40 with its last checkpoint at 20; resumed there, it logs 30 and 40 again.
  write(start(0, "a") + step(10, 4.0) + step(20, 3.0) + step(30, 2.5) + step(40, 2.4) + "{\"step\":50,\"lo" +
        "\n" + start(20, "a") + step(30, 2.0) + step(40, 1.0));
  const RunHistory run = read_run(dir_);
  ASSERT_EQ(run.steps.size(), 4u);
  EXPECT_EQ(number_at(run.steps[2], "loss"), 2.0);
  EXPECT_EQ(number_at(run.steps[3], "loss"), 1.0);
  ASSERT_EQ(run.warnings.size(), 2u);
  EXPECT_NE(run.warnings[1].find("resumed at step 20; 2 earlier records"), std::string::npos) << run.warnings[1];
  EXPECT_EQ(run.starts.size(), 2u);
}

TEST_F(RunHistoryTest, RunsOfTwoConfigsInOneFileAreNamed) {
  write(start(0, "lr: 0.1") + step(10, 3.0) + start(10, "lr: 0.2") + step(20, 2.0));
  const RunHistory run = read_run(dir_);
  ASSERT_EQ(run.warnings.size(), 1u);
  EXPECT_NE(run.warnings[0].find("2 different configs (starting at steps 0, 10)"), std::string::npos)
      << run.warnings[0];
}

TEST_F(RunHistoryTest, WhatIsNotARunIsAnErrorNamingThePath) {
  try {
    read_run(dir_);
    FAIL() << "no metrics.jsonl";
  } catch (const c10::ValueError& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find(dir_ + "/metrics.jsonl does not exist"),
              std::string::npos);
  }
  write("{\"event\":\"run_start\",\"step\":0}\n");
  try {
    read_run(dir_);
    FAIL() << "no records";
  } catch (const c10::ValueError& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("holds no training or evaluation record"),
              std::string::npos);
  }
  EXPECT_THROW(read_run(dir_ + "/missing"), c10::ValueError);
}

TEST_F(RunHistoryTest, AMetricsFifoIsRefusedNotWaitedOn) {
  ASSERT_EQ(::mkfifo((dir_ + "/metrics.jsonl").c_str(), 0600), 0);
  try {
    read_run(dir_);  // with no writer, opening a FIFO for reading would block forever
    FAIL() << "a FIFO was read";
  } catch (const c10::ValueError& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("metrics.jsonl' is a FIFO (named pipe), not a regular file"),
              std::string::npos)
        << e.what_without_backtrace();
  }
}

TEST_F(RunHistoryTest, RecordsOfTheWrongTypeAndOverlongLinesAreSkippedWithTheirLines) {
  write("{\"event\":\"run_start\",\"step\":0,\"world_size\":\"two\"}\n" + step(10, 3.0) +
        "{\"step\":15,\"loss\":1,\"pad\":\"" + std::string(2 << 20, 'x') + "\"}\n" +
        "{\"event\":\"advice\",\"step\":20,\"advice\":[3]}\n" + step(30, 1.0));
  const RunHistory run = read_run(dir_);
  ASSERT_EQ(run.steps.size(), 2u);
  EXPECT_TRUE(run.starts.empty());
  EXPECT_FALSE(run.advised) << "a record that failed half way must change nothing";
  std::string all;
  for (const auto& w : run.warnings) all += w + "\n";
  EXPECT_NE(all.find("metrics.jsonl:1: a record with a field of the wrong type was skipped"), std::string::npos) << all;
  EXPECT_NE(all.find("metrics.jsonl:3: a line longer than 1048576 bytes was skipped"), std::string::npos) << all;
  EXPECT_NE(all.find("2 records with fields of the wrong type were skipped in all"), std::string::npos) << all;
}

// The charts read these fields as numbers: a string, list or boolean there
// would be drawn as a gap, silently. (A number past double's range, 1e400,
// fails nlohmann's parser: a torn line.)
TEST_F(RunHistoryTest, NumericFieldsHoldingSomethingElseAreSkippedWithAWarning) {
  write(step(10, 3.0) + "{\"step\":20,\"loss\":\"abc\"}\n" + "{\"step\":30,\"loss\":1,\"lr\":[1]}\n" +
        "{\"step\":40,\"loss\":1,\"samples_per_s\":true}\n" + "{\"step\":50,\"loss\":1e400}\n" +
        "{\"step\":60,\"loss\":null}\n" + step(70, 1.0));
  const RunHistory run = read_run(dir_);
  ASSERT_EQ(run.steps.size(), 3u);  // 10, 60 (null: no value) and 70
  std::string all;
  for (const auto& w : run.warnings) all += w + "\n";
  EXPECT_NE(all.find("metrics.jsonl:2: a record with a field of the wrong type was skipped (\"loss\" is a string, "
                     "not a number"),
            std::string::npos) << all;
  EXPECT_NE(all.find("3 records with fields of the wrong type were skipped in all"), std::string::npos) << all;
  EXPECT_NE(all.find("metrics.jsonl:5: a torn or unreadable line was skipped"), std::string::npos) << all;
}

TEST(NumberAt, ReadsNestedNumbersAndSaysNanForTheRest) {
  const auto record = nlohmann::json::parse(R"({"a": 1.5, "p": {"forward": 2}, "s": "x"})");
  EXPECT_EQ(number_at(record, "a"), 1.5);
  EXPECT_EQ(number_at(record, "p.forward"), 2);
  EXPECT_TRUE(std::isnan(number_at(record, "s")));
  EXPECT_TRUE(std::isnan(number_at(record, "p.backward")));
  EXPECT_TRUE(std::isnan(number_at(record, "a.b")));
}

}  // namespace
}  // namespace paisoar::report
