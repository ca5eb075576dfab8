// Backend::Shm between separate processes under the launcher: every
// collective against Gloo's results on 2, 3 and 4 ranks, and a rank killed
// in the middle of an allreduce (its peer fails with PeerDied naming it, not
// a hang). Afterwards no segment of a process that has exited is left in
// /dev/shm.
#include <gtest/gtest.h>
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "launcher_runner.h"

namespace paisoar::launch::testing {
namespace {

// /dev/shm entries named as paisoar's segments whose creating process is gone.
std::vector<std::string> orphaned_segments() {
  const std::string prefix = "paisoar-" + std::to_string(::getuid()) + "-";
  std::vector<std::string> orphans;
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return orphans;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + prefix.size()));
    if (::kill(pid, 0) != 0 && errno == ESRCH) orphans.push_back(name);
  }
  ::closedir(dir);
  return orphans;
}

class ShmProcesses : public ::testing::TestWithParam<int> {};

TEST_P(ShmProcesses, EveryCollectiveMatchesGloo) {
  const int n = GetParam();
  RunResult r = run_paisoar({"launch", "--nproc_per_node", std::to_string(n), "--master_port", "0",
                             "--omp_num_threads", "1", "--", SHM_PROCESS_CHECK, "collectives"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_NE(r.out.find("rank " + std::to_string(rank) + ": "), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("checks on paisoar-shm match gloo"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("MISMATCH"), std::string::npos) << r.out;
  EXPECT_TRUE(orphaned_segments().empty()) << orphaned_segments().front();
}

INSTANTIATE_TEST_SUITE_P(Ranks, ShmProcesses, ::testing::Values(2, 3, 4));

TEST(ShmProcessFaults, ARankKilledMidAllreduceFailsItsPeerNamingIt) {
  RunResult r = run_paisoar({"launch", "--nproc_per_node", "2", "--master_port", "0", "--grace_period", "40",
                             "--omp_num_threads", "1", "--", SHM_PROCESS_CHECK, "kill"});
  EXPECT_NE(r.err.find("rank 1 (local_rank 1, pid "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("was killed by signal 9 (SIGKILL)"), std::string::npos) << r.err;
  const auto at = r.out.find("rank 0 caught after ");
  ASSERT_NE(at, std::string::npos) << r.out << r.err;
  const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_NE(line.find(": PeerDied: "), std::string::npos) << line;
  EXPECT_NE(line.find("allreduce"), std::string::npos) << line;
  EXPECT_NE(line.find("rank 1"), std::string::npos) << line;
  EXPECT_TRUE(orphaned_segments().empty()) << orphaned_segments().front();
}

}  // namespace
}  // namespace paisoar::launch::testing
