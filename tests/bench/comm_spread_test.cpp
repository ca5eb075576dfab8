// `bench comm --repeat N`: the launches' tables combined row by row (each
// side's times, each peer's ratio per launch with its worst, median and
// best), and the arguments each launch gets.
#include <gtest/gtest.h>

#include "bench/comm_spread.h"

namespace paisoar::bench {
namespace {

nlohmann::json launch(double paisoar_s, double mpi_s) {
  return {{"sides", {"paisoar", "mpi"}}, {"title", "t"}, {"world_size", 2},
          {"rows", {{{"bytes", 4096}, {"op", "allreduce"}, {"seconds", {{"paisoar", paisoar_s}, {"mpi", mpi_s}}}}}}};
}

TEST(CommSpread, EachPeersRatioPerLaunchWithItsWorstMedianAndBest) {
  const nlohmann::json c = combine_launches({launch(2e-6, 4e-6), launch(1e-6, 4e-6), launch(8e-6, 4e-6)});
  EXPECT_EQ(c["launches"], 3);
  const auto& row = c["rows"][0];
  EXPECT_EQ(row["seconds"]["paisoar"], (std::vector<double>{2e-6, 1e-6, 8e-6}));
  EXPECT_DOUBLE_EQ(row["ratio"]["mpi"]["worst"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(row["ratio"]["mpi"]["median"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(row["ratio"]["mpi"]["best"].get<double>(), 4.0);
  const std::string table = spread_table(c);
  EXPECT_NE(table.find("0.50 /  2.00 /  4.00"), std::string::npos) << table;
  EXPECT_NE(table.find("2.0 [   1.0,    8.0]"), std::string::npos) << table;
}

TEST(CommSpread, LaunchesOfDifferentRowsAreRefused) {
  nlohmann::json other = launch(1e-6, 1e-6);
  other["rows"][0]["bytes"] = 16384;
  EXPECT_THROW(combine_launches({launch(1e-6, 1e-6), other}), std::runtime_error);
}

TEST(CommSpread, EachLaunchGetsTheArgumentsWithoutRepeatAndWithItsOwnJson) {
  EXPECT_EQ(launch_arguments({"bench", "comm", "--repeat", "5", "--peer", "mpi", "--json", "a.json", "--repeat=3",
                              "--json=b.json", "--ops", "allreduce"},
                             "a.json.launch1.json"),
            (std::vector<std::string>{"bench", "comm", "--peer", "mpi", "--ops", "allreduce", "--json",
                                      "a.json.launch1.json"}));
}

}  // namespace
}  // namespace paisoar::bench
