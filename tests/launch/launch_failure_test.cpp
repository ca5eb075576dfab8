// Process tests: when a rank fails the launcher names it, prints the error
// it left in TORCHELASTIC_ERROR_FILE, stops the others (SIGKILL after the
// grace period if need be), and restarts the whole group while
// --max_restarts allows.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>

#include "launcher_runner.h"

namespace paisoar::launch::testing {
namespace {

// Rank 0 writes its pid to `pidfile`, then runs `rank0_tail`. Rank 1 waits
// for that file (so rank 0 is surely up), then runs `action arg` (exit 3,
// raise 9), which ends it before it reaches rank 0's tail.
std::vector<std::string> two_ranks(const std::string& pidfile,
                                   const std::vector<std::string>& rank0_tail,
                                   const std::string& action, const std::string& arg) {
  std::vector<std::string> a = {"if-rank", "1", "wait-file", pidfile, "if-rank", "1", action, arg};
  a.insert(a.end(), rank0_tail.begin(), rank0_tail.end());
  return a;
}

TEST(LaunchFailure, FailedRankStopsTheOthersAndSetsTheExitCode) {
  const std::string dir = make_temp_dir();
  RunResult r = run_paisoar(probe_launch(
      {"--nproc_per_node", "2", "--grace_period", "5"},
      two_ranks(dir + "/rank0", {"pidfile", dir + "/rank0", "sleep", "60"}, "exit", "3")));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("paisoar launch: rank 1 (local_rank 1, pid "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(") exited with code 3"), std::string::npos) << r.err;
  pid_t sleeper = read_pid_file(dir + "/rank0", 1);
  ASSERT_GT(sleeper, 0);
  EXPECT_TRUE(wait_until_dead(sleeper, 5)) << "rank 0 (pid " << sleeper << ") still running";
  std::filesystem::remove_all(dir);
}

TEST(LaunchFailure, TheErrorAFailedRankRecordedIsPrinted) {
  // Rank 1 records an error (as torch's @record does) in the first attempt
  // only, and fails in both; rank 0 sleeps until it is stopped.
  RunResult r = run_paisoar(probe_launch(
      {"--nproc_per_node", "2", "--max_restarts", "1"},
      {"if-rank", "1", "if-restart", "0", "error-file", "ValueError: bad batch", "if-rank", "1",
       "exit", "3", "sleep", "60"}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const std::string reported =
      "paisoar launch: rank 1 reported (TORCHELASTIC_ERROR_FILE): ValueError: bad batch\n";
  const std::size_t at = r.err.find(reported);
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_LT(r.err.find(") exited with code 3"), at) << "after the exit it explains";
  EXPECT_EQ(r.err.find(reported, at + 1), std::string::npos)
      << "the restart began without the first attempt's file:\n" << r.err;
}

TEST(LaunchFailure, RankKilledBySignalIsNamed) {
  const std::string dir = make_temp_dir();
  RunResult r = run_paisoar(probe_launch(
      {"--nproc_per_node", "2"},
      two_ranks(dir + "/rank0", {"pidfile", dir + "/rank0", "sleep", "60"}, "raise", "9")));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("rank 1 (local_rank 1, pid "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("was killed by signal 9 (SIGKILL)"), std::string::npos) << r.err;
  EXPECT_TRUE(wait_until_dead(read_pid_file(dir + "/rank0", 1), 5));
  std::filesystem::remove_all(dir);
}

TEST(LaunchFailure, RankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  const std::string dir = make_temp_dir();
  RunResult r = run_paisoar(probe_launch(
      {"--nproc_per_node", "2", "--grace_period", "1"},
      two_ranks(dir + "/rank0", {"ignore-term", "pidfile", dir + "/rank0", "sleep", "60"}, "exit",
                "3")));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("sending SIGKILL to rank(s) 0"), std::string::npos) << r.err;
  EXPECT_TRUE(wait_until_dead(read_pid_file(dir + "/rank0", 1), 5));
  std::filesystem::remove_all(dir);
}

TEST(LaunchFailure, RestartRecoversFromAFailureOnTheFirstAttempt) {
  RunResult r = run_paisoar(probe_launch(
      {"--nproc_per_node", "2", "--max_restarts", "2"},
      {"env", "PAISOAR_RESTART_COUNT", "env", "TORCHELASTIC_RESTART_COUNT", "if-rank", "1",
       "if-restart", "0", "exit", "1"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("paisoar launch: restarting the group (restart 1 of 2)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("restart 2 of 2"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("[rank1]: PAISOAR_RESTART_COUNT=1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[rank1]: TORCHELASTIC_RESTART_COUNT=1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[rank0]: PAISOAR_RESTART_COUNT=1\n"), std::string::npos) << r.out;
}

TEST(LaunchFailure, GivesUpAfterMaxRestarts) {
  RunResult r = run_paisoar(probe_launch({"--max_restarts", "2"},
                                         {"env", "PAISOAR_RESTART_COUNT", "exit", "4"}));
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("restarting the group (restart 1 of 2)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("restarting the group (restart 2 of 2)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("giving up"), std::string::npos) << r.err;
  for (int attempt : {0, 1, 2}) {
    EXPECT_NE(r.out.find("[rank0]: PAISOAR_RESTART_COUNT=" + std::to_string(attempt)),
              std::string::npos)
        << r.out;
  }
  EXPECT_EQ(r.out.find("PAISOAR_RESTART_COUNT=3"), std::string::npos) << r.out;
}

TEST(LaunchFailure, MissingProgramIsReported) {
  RunResult r = run_paisoar({"launch", "--max_restarts", "3", "/nonexistent/program"});
  EXPECT_EQ(r.exit_code, 127) << r.err;
  EXPECT_NE(r.err.find("cannot start '/nonexistent/program'"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("restarting"), std::string::npos) << r.err;
}

TEST(LaunchFailure, AKilledRanksSharedMemorySegmentIsRemoved) {
  // The rank makes a file named as Backend::Shm names its segments (the name
  // has the rank's pid, $$ of the shell the launcher runs), then dies by
  // SIGKILL before it could unlink it.
  const std::string uid = std::to_string(::getuid());
  RunResult r = run_paisoar({"launch", "--nproc_per_node", "1", "--master_port", "0", "--", "sh", "-c",
                             "f=/dev/shm/paisoar-" + uid + "-$$-0-7; : > $f; echo $f; kill -9 $$"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::size_t at = r.out.find("/dev/shm/paisoar-" + uid + "-");  // after the "[rank0]: " prefix
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string made = r.out.substr(at, r.out.find('\n', at) - at);
  EXPECT_FALSE(std::filesystem::exists(made)) << made << " is still there";
  EXPECT_NE(r.err.find("removed 1 shared-memory segment(s) left in /dev/shm by rank 0"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace paisoar::launch::testing
