// Process tests: relayed output. Every line carries its rank's prefix and
// arrives whole, stderr stays stderr, partial last lines are flushed, and
// --log_dir keeps an unprefixed copy per rank.
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

}  // namespace
}  // namespace paisoar::launch::testing
