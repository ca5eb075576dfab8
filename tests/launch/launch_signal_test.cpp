// Process tests: SIGTERM / SIGINT to the launcher are forwarded to every
// rank's process group; the launcher exits 128+signo and leaves no rank and
// no grandchild behind. Ranks start with every signal at its default action
// and none blocked, whatever the launcher inherited, so a forwarded SIGINT
// reaches their handlers; nohup's ignored SIGHUP stays ignored by the
// launcher. Also: processes a successful rank left running are stopped at
// the end.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "launcher_runner.h"

namespace paisoar::launch::testing {
namespace {

// Each rank starts a grandchild (pid in <dir>/gc<rank>), prints its own pid,
// then sleeps.
std::vector<std::string> sleepers_with_grandchildren(const std::string& dir) {
  return {"if-rank", "0", "grandchild", dir + "/gc0", "if-rank", "1", "grandchild",
          dir + "/gc1", "pid", "sleep", "60"};
}

std::vector<pid_t> rank_pids(const std::string& out) {
  std::vector<pid_t> pids;
  for (auto& [rank, values] : values_by_rank(out)) {
    if (values.count("PID")) pids.push_back(std::stoi(values.at("PID")));
  }
  return pids;
}

void expect_signal_stops_everything(int sig, int expected_exit) {
  const std::string dir = make_temp_dir();
  LauncherRun run(probe_launch({"--nproc_per_node", "2", "--grace_period", "5"},
                               sleepers_with_grandchildren(dir)));
  ASSERT_TRUE(run.wait_for_stdout("PID=", 2, 30)) << "ranks did not start";
  kill(run.pid(), sig);
  RunResult r = run.finish();
  EXPECT_EQ(r.exit_code, expected_exit) << r.err;
  EXPECT_NE(r.err.find("got " + std::string(sig == SIGINT ? "SIGINT" : "SIGTERM")),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("restarting"), std::string::npos) << r.err;
  std::vector<pid_t> pids = rank_pids(r.out);
  ASSERT_EQ(pids.size(), 2u) << r.out;
  pids.push_back(read_pid_file(dir + "/gc0", 1));
  pids.push_back(read_pid_file(dir + "/gc1", 1));
  for (pid_t pid : pids) {
    ASSERT_GT(pid, 0);
    EXPECT_TRUE(wait_until_dead(pid, 5)) << "pid " << pid << " outlived the launcher";
  }
  std::filesystem::remove_all(dir);
}

TEST(LaunchSignals, SigtermIsForwardedAndExits143) { expect_signal_stops_everything(SIGTERM, 143); }

TEST(LaunchSignals, SigintIsForwardedAndExits130) { expect_signal_stops_everything(SIGINT, 130); }

// A shell script's `paisoar launch ... &` starts the launcher with SIGINT and
// SIGQUIT ignored; nohup ignores SIGHUP; a caller may block signals. None of
// it reaches the ranks (torchrun's start with these at their defaults).
TEST(LaunchSignals, RanksStartWithDefaultSignalsWhateverTheLauncherInherited) {
  const InheritedSignals inherited{{SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGUSR1, SIGPIPE, SIGCHLD},
                                   {SIGINT, SIGTERM, SIGUSR2, SIGALRM}};
  LauncherRun run(probe_launch({"--nproc_per_node", "2"}, {"signals"}), {}, PAISOAR_BIN, inherited);
  RunResult r = run.finish();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto values = values_by_rank(r.out);
  for (int rank : {0, 1}) {
    EXPECT_EQ(values[rank]["IGNORED"], "none") << r.out;
    EXPECT_EQ(values[rank]["HANDLED"], "none") << r.out;
    EXPECT_EQ(values[rank]["BLOCKED"], "none") << r.out;
  }
}

// The launcher acts on a SIGINT even when it started with SIGINT ignored and
// blocked, and the ranks' own handlers run (a framework's graceful shutdown)
// instead of the SIGKILL at the end of the grace period.
TEST(LaunchSignals, ForwardedSigintReachesTheRanksHandlersWhenTheLauncherInheritedItIgnored) {
  LauncherRun run(probe_launch({"--nproc_per_node", "2", "--grace_period", "30"},
                               {"trap", "2", "pid", "sleep", "60"}),
                  {}, PAISOAR_BIN, InheritedSignals{{SIGINT}, {SIGINT}});
  ASSERT_TRUE(run.wait_for_stdout("PID=", 2, 30)) << "ranks did not start";
  kill(run.pid(), SIGINT);
  RunResult r = run.finish();
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.out.find("[rank0]: CAUGHT 2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[rank1]: CAUGHT 2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("paisoar launch: got SIGINT; stopping the ranks (SIGKILL after 30 s)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("sending SIGKILL"), std::string::npos) << r.err;
}

// `nohup paisoar launch ...`: a hangup does not end the job (the ranks, in
// process groups of their own, do not get the terminal's SIGHUP either).
// torchrun stops its ranks on SIGHUP even under nohup.
TEST(LaunchSignals, SighupIgnoredByNohupStaysIgnoredByTheLauncher) {
  const std::string dir = make_temp_dir();
  LauncherRun run(probe_launch({}, {"signals", "pid", "wait-file", dir + "/go", "print", "finished"}),
                  {}, PAISOAR_BIN, InheritedSignals{{SIGHUP}, {}});
  ASSERT_TRUE(run.wait_for_stdout("PID=", 1, 30)) << "the rank did not start";
  kill(run.pid(), SIGHUP);  // discarded at once: ignored, not blocked
  std::ofstream(dir + "/go").put('\n');
  RunResult r = run.finish();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[rank0]: finished\n"), std::string::npos) << r.out;
  EXPECT_EQ(values_by_rank(r.out)[0]["IGNORED"], "none") << r.out;
  EXPECT_EQ(r.err.find("SIGHUP"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}

TEST(LaunchSignals, SigintDoesNotRestart) {
  LauncherRun run(probe_launch({"--max_restarts", "3"}, {"pid", "sleep", "60"}));
  ASSERT_TRUE(run.wait_for_stdout("PID=", 1, 30));
  kill(run.pid(), SIGINT);
  RunResult r = run.finish();
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_EQ(r.err.find("restarting"), std::string::npos) << r.err;
}

TEST(LaunchSignals, ProcessesLeftBySuccessfulRanksAreStopped) {
  const std::string dir = make_temp_dir();
  RunResult r = run_paisoar(probe_launch({"--grace_period", "5"},
                                         {"grandchild", dir + "/gc0", "print", "done"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[rank0]: done"), std::string::npos) << r.out;
  EXPECT_TRUE(wait_until_dead(read_pid_file(dir + "/gc0", 1), 5));
  std::filesystem::remove_all(dir);
}

TEST(LaunchSignals, ProcessOutsideTheGroupHoldingThePipeDoesNotHangTheLauncher) {
  // A daemon (setsid) escapes the group signals; the launcher still ends
  // after the grace period instead of waiting for the pipe to close.
  const std::string dir = make_temp_dir();
  RunResult r = run_paisoar(
      probe_launch({"--grace_period", "1"}, {"daemon", dir + "/daemon", "print", "done"}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[rank0]: done"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("left its process group"), std::string::npos) << r.err;
  pid_t daemon = read_pid_file(dir + "/daemon", 1);
  ASSERT_GT(daemon, 0);
  EXPECT_TRUE(process_alive(daemon)) << "the daemon should be beyond the launcher's reach";
  kill(daemon, SIGKILL);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace paisoar::launch::testing
