// Process tests of `paisoar launch --bind_to`: the CPUs each rank runs on,
// read by the rank itself from /proc/self/status, as the real launcher
// places them; an affinity mask the launcher starts under (taskset) is kept;
// --bind_to none leaves the ranks the launcher's mask; --report_bindings
// says what it did.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "launch/cpu_topology.h"
#include "launcher_runner.h"

namespace paisoar::launch::testing {
namespace {

// A rank program that prints "CPUS=<its Cpus_allowed_list>".
const std::vector<std::string> kPrintCpus = {
    "--no_python", "--", "sh", "-c",
    "echo \"CPUS=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)\""};

std::vector<int> own_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(::sched_getaffinity(0, sizeof(set), &set), 0);
  std::vector<int> ids;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (CPU_ISSET(i, &set)) ids.push_back(i);
  }
  return ids;
}

// Each rank's CPUs from its "[rankR]: CPUS=..." line.
std::map<int, std::vector<int>> cpus_by_rank(const RunResult& r) {
  std::map<int, std::vector<int>> out;
  for (const std::string& line : lines_of(r.out)) {
    const auto at = line.find("]: CPUS=");
    if (line.rfind("[rank", 0) != 0 || at == std::string::npos) continue;
    out[std::stoi(line.substr(5, at - 5))] = parse_cpu_list(line.substr(at + 8));
  }
  return out;
}

// taskset's path (util-linux); the test fails without it.
std::string taskset() {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    const std::size_t colon = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, colon - start) + "/taskset";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = colon + 1;
  }
  ADD_FAILURE() << "taskset (util-linux) is not on PATH: install util-linux";
  return "taskset";
}

RunResult launch(const std::vector<std::string>& flags, const std::string& binary = PAISOAR_BIN,
                 const std::vector<std::string>& before = {}) {
  std::vector<std::string> args = before;
  if (!before.empty()) args.push_back(PAISOAR_BIN);
  args.insert(args.end(), {"launch", "--master_port", "0"});
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), kPrintCpus.begin(), kPrintCpus.end());
  LauncherRun run(args, {}, binary);
  return run.finish();
}

TEST(LaunchBinding, EachRankGetsItsOwnShareOfTheCores) {
  const std::vector<int> mine = own_cpus();
  ASSERT_GE(mine.size(), 2u) << "this test needs a machine with at least 2 CPUs";
  const RunResult r = launch({"--nproc_per_node", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto cpus = cpus_by_rank(r);
  ASSERT_EQ(cpus.size(), 2u) << r.out;
  // Non-empty, equal in size, disjoint, within the launcher's mask.
  EXPECT_FALSE(cpus.at(0).empty());
  EXPECT_EQ(cpus.at(0).size(), cpus.at(1).size());
  EXPECT_LE(cpus.at(0).size() * 2, mine.size());
  std::set<int> both(cpus.at(0).begin(), cpus.at(0).end());
  for (int id : cpus.at(1)) EXPECT_TRUE(both.insert(id).second) << "CPU " << id << " given to both ranks";
  for (int id : both) EXPECT_TRUE(std::count(mine.begin(), mine.end(), id)) << "CPU " << id;
  // One rank keeps every core of the launcher (its share is all of them).
  const RunResult one = launch({"--nproc_per_node", "1"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(cpus_by_rank(one).at(0), mine);
}

TEST(LaunchBinding, TheLaunchersOwnMaskIsRespected) {
  const std::vector<int> mine = own_cpus();
  ASSERT_GE(mine.size(), 2u) << "this test needs a machine with at least 2 CPUs";
  const std::string last = std::to_string(mine.back());
  // Started under `taskset -c <last CPU>`: one rank is bound inside it...
  const RunResult one = launch({"--nproc_per_node", "1"}, taskset(), {"-c", last});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(cpus_by_rank(one).at(0), std::vector<int>{mine.back()});
  // ...and two ranks on one CPU stay unbound within it, as --report_bindings says.
  const RunResult two = launch({"--nproc_per_node", "2", "--report_bindings"}, taskset(), {"-c", last});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(cpus_by_rank(two).at(0), std::vector<int>{mine.back()});
  EXPECT_EQ(cpus_by_rank(two).at(1), std::vector<int>{mine.back()});
  EXPECT_NE(two.err.find("ranks not bound to cores: 2 ranks on 1 CPU"), std::string::npos) << two.err;
}

TEST(LaunchBinding, BindToNoneLeavesTheRanksTheLaunchersMask) {
  const std::vector<int> mine = own_cpus();
  ASSERT_GE(mine.size(), 2u) << "this test needs a machine with at least 2 CPUs";
  const RunResult r = launch({"--nproc_per_node", "2", "--bind_to", "none", "--report_bindings"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(cpus_by_rank(r).at(0), mine);
  EXPECT_EQ(cpus_by_rank(r).at(1), mine);
  EXPECT_NE(r.err.find("ranks not bound to cores: --bind_to none"), std::string::npos) << r.err;
}

// A program run under Python is left unbound unless --bind_to core asks
// (core_placement.h, bind_for_program: torch's Gloo aborts bound Python
// ranks at exit). The rank is a Python script that imports nothing.
TEST(LaunchBinding, PythonProgramsAreBoundOnlyWhenAsked) {
  const std::vector<int> mine = own_cpus();
  ASSERT_GE(mine.size(), 2u) << "this test needs a machine with at least 2 CPUs";
  const std::string script = ::testing::TempDir() + "/print_cpus_" + std::to_string(::getpid()) + ".py";
  {
    FILE* f = std::fopen(script.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("for line in open('/proc/self/status'):\n"
               "    if line.startswith('Cpus_allowed_list:'):\n"
               "        print('CPUS=' + line.split()[1], flush=True)\n",
               f);
    std::fclose(f);
  }
  const std::vector<std::string> env = {"PAISOAR_PYTHON=" + std::string(TORCH_PYTHON)};
  auto run = [&](const std::vector<std::string>& flags) {
    std::vector<std::string> args = {"launch", "--master_port", "0", "--nproc_per_node", "2", "--report_bindings"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back(script);
    LauncherRun launcher(args, env);
    return launcher.finish();
  };
  const RunResult unbound = run({});
  ASSERT_EQ(unbound.exit_code, 0) << unbound.err;
  EXPECT_EQ(cpus_by_rank(unbound).at(0), mine);
  EXPECT_EQ(cpus_by_rank(unbound).at(1), mine);
  EXPECT_NE(unbound.err.find("ranks not bound to cores: the program runs under Python"), std::string::npos)
      << unbound.err;
  const RunResult bound = run({"--bind_to", "core"});
  ASSERT_EQ(bound.exit_code, 0) << bound.err;
  EXPECT_EQ(cpus_by_rank(bound).at(0).size() * 2, mine.size());
  EXPECT_NE(cpus_by_rank(bound).at(0), cpus_by_rank(bound).at(1));
  std::remove(script.c_str());
}

TEST(LaunchBinding, ReportBindingsNamesEachRanksCpus) {
  const std::vector<int> mine = own_cpus();
  ASSERT_GE(mine.size(), 2u) << "this test needs a machine with at least 2 CPUs";
  const RunResult r = launch({"--nproc_per_node", "2", "--report_bindings"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto cpus = cpus_by_rank(r);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string said = "rank " + std::to_string(rank) + " (local " + std::to_string(rank) + "): CPUs " +
                             cpu_list_text(cpus.at(rank)) + " (";
    EXPECT_NE(r.err.find(said), std::string::npos) << r.err;
  }
}

TEST(LaunchBinding, ABadValueIsNamed) {
  const RunResult r = run_paisoar({"launch", "--bind_to", "socket", LAUNCH_PROBE});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--bind_to must be auto, core or none, got 'socket'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace paisoar::launch::testing
