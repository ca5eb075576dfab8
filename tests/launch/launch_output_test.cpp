// Process tests: relayed output. Every line carries its rank's prefix and
// arrives whole, stderr stays stderr, partial last lines are flushed,
// --log_dir keeps an unprefixed copy per rank, and torchrun's --redirects,
// --tee and --local-ranks-filter choose what reaches the console.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "launcher_runner.h"

namespace paisoar::launch::testing {
namespace {

constexpr int kLines = 2000;

std::string out_line(int rank, int k) {
  return "out rank=" + std::to_string(rank) + " line=" + std::to_string(k) +
         " abcdefghijklmnopqrstuvwxyz0123456789";
}
std::string err_line(int rank, int k) {
  return "err rank=" + std::to_string(rank) + " line=" + std::to_string(k) +
         " ABCDEFGHIJKLMNOPQRSTUVWXYZ";
}

// Checks that `text` holds exactly kLines lines per rank made by `make`, in
// order within each rank, each with `prefix(rank)` in front.
template <typename Make>
void expect_rank_lines(const std::string& text, Make make, bool prefixed) {
  std::vector<int> next(2, 0);
  for (const std::string& line : lines_of(text)) {
    int rank = -1;
    for (int r : {0, 1}) {
      std::string prefix = prefixed ? "[rank" + std::to_string(r) + "]: " : "";
      std::string body = line.substr(std::min(line.size(), prefix.size()));
      if (line.compare(0, prefix.size(), prefix) == 0 && next[r] < kLines &&
          body == make(r, next[r])) {
        rank = r;
        break;
      }
    }
    ASSERT_NE(rank, -1) << "unexpected or mangled line: '" << line << "'";
    ++next[rank];
  }
  EXPECT_EQ(next[0], kLines);
  EXPECT_EQ(next[1], kLines);
}

TEST(LaunchOutput, EveryLineIsWholeAndPrefixedWithItsRank) {
  RunResult r = run_paisoar(
      probe_launch({"--nproc_per_node", "2"}, {"lines", std::to_string(kLines)}));
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
  expect_rank_lines(r.out, out_line, true);
  expect_rank_lines(r.err, err_line, true);
}

TEST(LaunchOutput, NoPrefixRelaysLinesAsTheyAre) {
  RunResult r = run_paisoar(
      probe_launch({"--nproc_per_node", "2", "--no_prefix"}, {"lines", std::to_string(kLines)}));
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
  expect_rank_lines(r.out, out_line, false);
  expect_rank_lines(r.err, err_line, false);
}

TEST(LaunchOutput, PartialLastLineIsFlushedAtExit) {
  RunResult r = run_paisoar(
      probe_launch({"--nproc_per_node", "2"}, {"print", "first", "partial", "no newline"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int rank : {0, 1}) {
    std::string p = "[rank" + std::to_string(rank) + "]: ";
    EXPECT_NE(r.out.find(p + "first\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(p + "no newline\n"), std::string::npos) << r.out;
  }
}

TEST(LaunchOutput, LogDirKeepsEachRanksLinesUnprefixed) {
  const std::string dir = make_temp_dir() + "/logs/nested";
  RunResult r = run_paisoar(probe_launch({"--nproc_per_node", "2", "--log_dir", dir},
                                         {"lines", "100", "partial", "tail"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int rank : {0, 1}) {
    std::ifstream in(dir + "/rank_" + std::to_string(rank) + ".log");
    ASSERT_TRUE(in) << "missing " << dir << "/rank_" << rank << ".log";
    std::stringstream content;
    content << in.rdbuf();
    std::vector<std::string> lines = lines_of(content.str());
    std::vector<std::string> expected;
    for (int k = 0; k < 100; ++k) {
      expected.push_back(out_line(rank, k));
      expected.push_back(err_line(rank, k));
    }
    expected.push_back("tail");
    std::sort(lines.begin(), lines.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(lines, expected);
  }
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path().parent_path());
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

TEST(LaunchOutput, RedirectedStreamsGoToTheLogFilesOnly) {
  const std::string dir = make_temp_dir();
  // Local rank 0's stdout and rank 1's stderr are redirected.
  RunResult r = run_paisoar(probe_launch({"--nproc-per-node", "2", "--log-dir", dir, "-r", "0:1,1:2"},
                                         {"lines", "3"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("[rank0]: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[rank1]: " + out_line(1, 2) + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("[rank0]: " + err_line(0, 2) + "\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("[rank1]: "), std::string::npos) << r.err;
  for (int rank : {0, 1}) {
    const std::string log = file_text(dir + "/rank_" + std::to_string(rank) + ".log");
    EXPECT_NE(log.find(out_line(rank, 2) + "\n"), std::string::npos) << log;
    EXPECT_NE(log.find(err_line(rank, 2) + "\n"), std::string::npos) << log;
  }
  std::filesystem::remove_all(dir);
}

TEST(LaunchOutput, LocalRanksFilterKeepsTheOthersOffTheConsoleOnly) {
  const std::string dir = make_temp_dir();
  RunResult r = run_paisoar(probe_launch(
      {"--nproc-per-node", "3", "--log-dir", dir, "--local-ranks-filter", "1"}, {"lines", "2"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[rank1]: " + out_line(1, 1) + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("[rank1]: " + err_line(1, 1) + "\n"), std::string::npos) << r.err;
  for (const std::string& text : {r.out, r.err}) {
    EXPECT_EQ(text.find("[rank0]"), std::string::npos) << text;
    EXPECT_EQ(text.find("[rank2]"), std::string::npos) << text;
  }
  EXPECT_NE(file_text(dir + "/rank_2.log").find(out_line(2, 1)), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(LaunchOutput, TeeWithoutALogDirWritesToATemporaryOne) {
  const std::string tmp = make_temp_dir();
  RunResult r = run_paisoar(probe_launch({"--tee", "3"}, {"print", "teed"}), {"TMPDIR=" + tmp});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[rank0]: teed\n"), std::string::npos) << r.out;
  const std::string said = "paisoar launch: --redirects/--tee without --log-dir: the ranks' output "
                           "files are in " + tmp + "/paisoar_logs.";
  const std::size_t at = r.err.find(said);
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string dir = r.err.substr(at + said.size() - std::string(tmp + "/paisoar_logs.").size(),
                                       std::string(tmp + "/paisoar_logs.").size() + 6);
  EXPECT_EQ(file_text(dir + "/rank_0.log"), "teed\n");
  std::filesystem::remove_all(tmp);
}

}  // namespace
}  // namespace paisoar::launch::testing
