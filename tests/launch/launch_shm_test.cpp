// Backend::Shm between separate processes under the launcher: every
// collective against Gloo's results on 2, 3 and 4 ranks, and a rank killed
// in the middle of an allreduce (its peer fails with PeerDied naming it, not
// a hang). Afterwards no segment of the ranks' processes is left in /dev/shm.
#include <gtest/gtest.h>
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "launcher_runner.h"

namespace paisoar::launch::testing {
namespace {

// The /dev/shm entries named as segments of the processes whose "(pid P)"
// the output shows (the ranks that created them).
std::vector<std::string> segments_left_by(const std::string& output) {
  std::vector<std::string> prefixes;
  for (auto at = output.find("(pid "); at != std::string::npos; at = output.find("(pid ", at + 1)) {
    prefixes.push_back("paisoar-" + std::to_string(::getuid()) + "-" + std::to_string(std::atol(output.c_str() + at + 5)) + "-");
  }
  std::vector<std::string> left;
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return left;
  while (const dirent* entry = ::readdir(dir)) {
    for (const auto& prefix : prefixes) {
      if (std::string(entry->d_name).rfind(prefix, 0) == 0) left.push_back(entry->d_name);
    }
  }
  ::closedir(dir);
  return left;
}

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += n + " ";
  return out;
}

class ShmProcesses : public ::testing::TestWithParam<int> {};

TEST_P(ShmProcesses, EveryCollectiveMatchesGloo) {
  const int n = GetParam();
  RunResult r = run_paisoar({"launch", "--nproc_per_node", std::to_string(n), "--master_port", "0",
                             "--omp_num_threads", "1", "--", SHM_PROCESS_CHECK, "collectives"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_NE(r.out.find("rank " + std::to_string(rank) + " (pid "), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("checks on paisoar-shm match gloo"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("MISMATCH"), std::string::npos) << r.out;
  const auto left = segments_left_by(r.out);
  EXPECT_TRUE(left.empty()) << listed(left);
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShmProcesses, ::testing::Values(2, 3, 4));

TEST(ShmProcessFaults, ARankKilledMidAllreduceFailsItsPeerNamingIt) {
  RunResult r = run_paisoar({"launch", "--nproc_per_node", "2", "--master_port", "0", "--grace_period", "40",
                             "--omp_num_threads", "1", "--", SHM_PROCESS_CHECK, "kill"});
  EXPECT_NE(r.err.find("rank 1 (local_rank 1, pid "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("was killed by signal 9 (SIGKILL)"), std::string::npos) << r.err;
  const auto at = r.out.find("rank 0 (pid ");
  ASSERT_NE(at, std::string::npos) << r.out << r.err;
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_NE(line.find(": PeerDied: "), std::string::npos) << line;
  EXPECT_NE(line.find("allreduce"), std::string::npos) << line;
  EXPECT_NE(line.find("rank 1"), std::string::npos) << line;
  const auto left = segments_left_by(r.out + r.err);
  EXPECT_TRUE(left.empty()) << listed(left);
}

TEST(ShmProcessFaults, AFullDevShmFallsBackToGlooWithAWarning) {
  // A private /dev/shm of 256 KiB (a mount namespace of its own): a 2-rank
  // group's segment (4.5 MiB) does not fit, so Auto must warn and use Gloo.
  if (std::system("unshare --mount true > /dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no mount namespaces here (unshare --mount needs CAP_SYS_ADMIN)";
  }
  const std::string job = std::string("mount -t tmpfs -o size=256k tmpfs /dev/shm && exec ") + PAISOAR_BIN +
                          " launch --nproc_per_node 2 --master_port 0 --omp_num_threads 1 -- " + SHM_PROCESS_CHECK +
                          " auto";
  LauncherRun run({"--mount", "sh", "-c", job}, {}, "/usr/bin/unshare");
  RunResult r = run.finish(120);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("rank 0 (pid "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("on gloo: sum 3"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("paisoar-shm"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("uses Gloo: its ranks share a host but not shared memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/dev/shm has no room"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace paisoar::launch::testing
