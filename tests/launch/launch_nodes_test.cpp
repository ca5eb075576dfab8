// Process tests of multi-node jobs on one machine: two or three launchers on
// 127.0.0.1 with --nnodes, one rank each (launch_probe), sharing a job token.
// A rank killed on node 1 restarts the job on both nodes; failures on both
// nodes at once make one restart, and so does a failure on one node after
// the other's ranks finished; a node that does not rejoin, or never
// joins, ends the job with a message naming it, and so does a launcher gone
// while the others wait for it to finish; losing node 0's launcher
// (which hosts the store) ends the others; a signal to one launcher ends the
// job on every node; --max_restarts counts for the whole job; --rdzv-id is
// every node's run id.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "launch/free_port.h"
#include "launcher_runner.h"

namespace paisoar::launch::testing {
namespace {

const std::vector<std::string> kToken = {"PAISOAR_JOB_TOKEN=launch-nodes-test"};

// kToken, and TMPDIR=dir for a launcher the test kills with SIGKILL: it
// cannot remove its private directory then, and `dir` goes with the test.
std::vector<std::string> token_and_tmpdir(const std::string& dir) {
  return {kToken.front(), "TMPDIR=" + dir};
}

// `paisoar launch` for node `node` of `nnodes` (one rank) on 127.0.0.1:port.
std::vector<std::string> node_args(int node, int nnodes, int port, const std::vector<std::string>& flags,
                                   const std::vector<std::string>& actions) {
  std::vector<std::string> all = {"--nnodes",      std::to_string(nnodes), "--node_rank",
                                  std::to_string(node), "--master_port", std::to_string(port),
                                  "--grace_period", "1"};
  all.insert(all.end(), flags.begin(), flags.end());
  return probe_launch(all, actions);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void touch(const std::string& path) { std::ofstream(path) << "go\n"; }

// The test on loopback: kill -9 of the rank on node 1 mid-run; both
// nodes stop, rejoin with restart count 1 and finish.
TEST(LaunchNodes, KillingTheRankOnNode1RestartsBothNodes) {
  const std::string dir = make_temp_dir();
  const int port = pick_free_port_pair("127.0.0.1");
  const std::vector<std::string> flags = {"--max_restarts", "1"};
  LauncherRun node0(node_args(0, 2, port, flags,
                              {"env", "PAISOAR_RESTART_COUNT", "if-restart", "0", "pidfile", dir + "/r0",
                               "if-restart", "0", "sleep", "60", "print", "fin"}),
                    kToken);
  LauncherRun node1(node_args(1, 2, port, flags,
                              {"env", "PAISOAR_RESTART_COUNT", "if-restart", "0", "pidfile", dir + "/r1",
                               "if-restart", "0", "sleep", "60", "print", "fin"}),
                    kToken);
  const pid_t rank0 = read_pid_file(dir + "/r0", 30);
  const pid_t rank1 = read_pid_file(dir + "/r1", 30);
  ASSERT_GT(rank0, 0) << "node 0's rank did not start";
  ASSERT_GT(rank1, 0) << "node 1's rank did not start";
  ASSERT_EQ(::kill(rank1, SIGKILL), 0);

  const RunResult r0 = node0.finish(60);
  const RunResult r1 = node1.finish(60);
  ASSERT_EQ(r0.exit_code, 0) << r0.out << r0.err;
  ASSERT_EQ(r1.exit_code, 0) << r1.out << r1.err;
  EXPECT_TRUE(contains(r1.err, "rank 1 (local_rank 0, pid " + std::to_string(rank1) +
                                   ") was killed by signal 9 (SIGKILL)"))
      << r1.err;
  EXPECT_TRUE(contains(r0.err, "node 1 failed: rank 1 (local_rank 0, pid " + std::to_string(rank1) +
                                   ") was killed by signal 9 (SIGKILL); stopping this node's ranks"))
      << r0.err;
  EXPECT_TRUE(wait_until_dead(rank0, 5)) << "node 0's first rank was not stopped";
  for (const RunResult* r : {&r0, &r1}) {
    EXPECT_TRUE(contains(r->err, "restarting the job on all 2 nodes (restart 1 of 1)")) << r->err;
  }
  EXPECT_TRUE(contains(r0.out, "[rank0]: PAISOAR_RESTART_COUNT=1\n[rank0]: fin\n")) << r0.out;
  EXPECT_TRUE(contains(r1.out, "[rank1]: PAISOAR_RESTART_COUNT=1\n[rank1]: fin\n")) << r1.out;
  EXPECT_FALSE(contains(r0.out, "PAISOAR_RESTART_COUNT=2")) << r0.out;
  std::filesystem::remove_all(dir);
}

// Both nodes' ranks fail in the same generation: one restart, not two
// (--max_restarts 1 would not allow two).
TEST(LaunchNodes, FailuresOnBothNodesAtOnceAreOneRestart) {
  const int port = pick_free_port_pair("127.0.0.1");
  const std::vector<std::string> actions = {"env", "PAISOAR_RESTART_COUNT", "if-restart", "0", "exit", "1",
                                            "print", "fin"};
  LauncherRun node0(node_args(0, 2, port, {"--max_restarts", "1"}, actions), kToken);
  LauncherRun node1(node_args(1, 2, port, {"--max_restarts", "1"}, actions), kToken);
  const RunResult r0 = node0.finish(60);
  const RunResult r1 = node1.finish(60);
  ASSERT_EQ(r0.exit_code, 0) << r0.out << r0.err;
  ASSERT_EQ(r1.exit_code, 0) << r1.out << r1.err;
  EXPECT_TRUE(contains(r0.out, "[rank0]: fin\n")) << r0.out;
  EXPECT_TRUE(contains(r1.out, "[rank1]: fin\n")) << r1.out;
}

// Node 0's rank succeeds first; node 1's fails while node 0 waits for the
// other nodes to finish: the job restarts on both, node 0's rank included.
TEST(LaunchNodes, ANodeThatFinishedRestartsWhenAnotherFails) {
  const std::string dir = make_temp_dir();
  const int port = pick_free_port_pair("127.0.0.1");
  LauncherRun node0(node_args(0, 2, port, {"--max_restarts", "1"},
                              {"env", "PAISOAR_RESTART_COUNT", "print", "fin", "if-restart", "0", "pidfile",
                               dir + "/finished"}),
                    kToken);
  LauncherRun node1(node_args(1, 2, port, {"--max_restarts", "1"},
                              {"env", "PAISOAR_RESTART_COUNT", "if-restart", "0", "wait-file", dir + "/finished",
                               "if-restart", "0", "exit", "5", "print", "fin"}),
                    kToken);
  const RunResult r0 = node0.finish(60);
  const RunResult r1 = node1.finish(60);
  ASSERT_EQ(r0.exit_code, 0) << r0.out << r0.err;
  ASSERT_EQ(r1.exit_code, 0) << r1.out << r1.err;
  EXPECT_TRUE(contains(r0.err, "node 1 failed: rank 1 (local_rank 0, pid ")) << r0.err;
  EXPECT_TRUE(contains(r0.out, "[rank0]: PAISOAR_RESTART_COUNT=1\n[rank0]: fin\n")) << r0.out;
  EXPECT_TRUE(contains(r1.out, "[rank1]: PAISOAR_RESTART_COUNT=1\n[rank1]: fin\n")) << r1.out;
  std::filesystem::remove_all(dir);
}

TEST(LaunchNodes, MaxRestartsCountsForTheWholeJob) {
  const int port = pick_free_port_pair("127.0.0.1");
  LauncherRun node0(node_args(0, 2, port, {"--max_restarts", "1"}, {"sleep", "60"}), kToken);
  LauncherRun node1(node_args(1, 2, port, {"--max_restarts", "1"}, {"exit", "3"}), kToken);
  const RunResult r0 = node0.finish(60);
  const RunResult r1 = node1.finish(60);
  EXPECT_EQ(r1.exit_code, 3) << "the failed rank's code" << r1.err;
  EXPECT_EQ(r0.exit_code, 1) << r0.err;
  for (const RunResult* r : {&r0, &r1}) {
    EXPECT_TRUE(contains(r->err, "restarting the job on all 2 nodes (restart 1 of 1)")) << r->err;
    EXPECT_TRUE(contains(r->err, "giving up: the job failed after all 1 restarts")) << r->err;
  }
}

// Three nodes; node 2's launcher is killed, then node 0's rank fails: nodes
// 0 and 1 wait --join_timeout for node 2, then both end the job naming it.
TEST(LaunchNodes, ANodeThatDoesNotRejoinEndsTheJob) {
  const std::string dir = make_temp_dir();
  const int port = pick_free_port_pair("127.0.0.1");
  const std::vector<std::string> flags = {"--max_restarts", "1", "--join_timeout", "2"};
  LauncherRun node0(node_args(0, 3, port, flags,
                              {"pidfile", dir + "/r0", "if-restart", "0", "wait-file", dir + "/go", "exit", "4"}),
                    kToken);
  LauncherRun node1(node_args(1, 3, port, flags, {"pidfile", dir + "/r1", "sleep", "60"}), kToken);
  auto node2 = std::make_unique<LauncherRun>(node_args(2, 3, port, flags, {"pidfile", dir + "/r2", "sleep", "60"}),
                                             token_and_tmpdir(dir));
  for (const char* rank : {"/r0", "/r1"}) ASSERT_GT(read_pid_file(dir + rank, 30), 0) << rank;
  const pid_t rank2 = read_pid_file(dir + "/r2", 30);
  ASSERT_GT(rank2, 0);
  ASSERT_EQ(::kill(node2->pid(), SIGKILL), 0);  // node 2 is gone: launcher and rank
  node2->finish(10);
  ::kill(rank2, SIGKILL);
  touch(dir + "/go");

  const RunResult r0 = node0.finish(60);
  const RunResult r1 = node1.finish(60);
  EXPECT_EQ(r0.exit_code, 1) << r0.err;
  EXPECT_EQ(r1.exit_code, 1) << r1.err;
  EXPECT_TRUE(contains(r0.err, "exited with code 4")) << r0.err;
  EXPECT_TRUE(contains(r1.err, "node 0 failed: rank 0 (local_rank 0, pid ")) << r1.err;
  for (const RunResult* r : {&r0, &r1}) {
    EXPECT_TRUE(contains(r->err, "restarting the job on all 3 nodes (restart 1 of 1)")) << r->err;
    EXPECT_TRUE(contains(r->err, "ending the job: node 2 did not rejoin within 2 s (--join_timeout)\n")) << r->err;
  }
  EXPECT_TRUE(wait_until_dead(read_pid_file(dir + "/r1", 1), 5)) << "node 1's rank was not stopped";
  std::filesystem::remove_all(dir);
}

// Node 1's launcher is killed while node 0's rank still runs; node 0's rank
// then finishes: node 0 does not wait forever for node 1 to finish.
TEST(LaunchNodes, ALauncherGoneBeforeItsRanksFinishedEndsTheJob) {
  const std::string dir = make_temp_dir();
  const int port = pick_free_port_pair("127.0.0.1");
  LauncherRun node0(node_args(0, 2, port, {}, {"pidfile", dir + "/r0", "wait-file", dir + "/go", "print", "fin"}),
                    kToken);
  auto node1 = std::make_unique<LauncherRun>(node_args(1, 2, port, {}, {"pidfile", dir + "/r1", "sleep", "60"}),
                                             token_and_tmpdir(dir));
  ASSERT_GT(read_pid_file(dir + "/r0", 30), 0);
  const pid_t rank1 = read_pid_file(dir + "/r1", 30);
  ASSERT_GT(rank1, 0);
  ASSERT_EQ(::kill(node1->pid(), SIGKILL), 0);
  node1->finish(10);
  ::kill(rank1, SIGKILL);
  touch(dir + "/go");
  const RunResult r0 = node0.finish(30);
  EXPECT_EQ(r0.exit_code, 1) << r0.err;
  EXPECT_TRUE(contains(r0.out, "[rank0]: fin\n")) << r0.out;
  EXPECT_TRUE(contains(r0.err, "ending the job: node 1's launcher is gone (its connection to the store closed) "
                               "before its ranks finished"))
      << r0.err;
  std::filesystem::remove_all(dir);
}

TEST(LaunchNodes, ANodeThatNeverStartsEndsTheJob) {
  const int port = pick_free_port_pair("127.0.0.1");
  RunResult r = run_paisoar(node_args(0, 2, port, {"--join_timeout", "1"}, {"print", "ran"}), kToken);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "ending the job: node 1 did not join within 1 s (--join_timeout)")) << r.err;
  EXPECT_EQ(r.out, "") << "no rank may start before every node joined";
}

TEST(LaunchNodes, WithoutNode0TheOtherNodesSaySo) {
  const int port = pick_free_port_pair("127.0.0.1");
  RunResult r = run_paisoar(node_args(1, 2, port, {"--join_timeout", "1"}, {"print", "ran"}), kToken);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "cannot join the job: the rendezvous store at 127.0.0.1:" + std::to_string(port) + ": cannot connect"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "Node 0's launcher hosts it: start it with --node_rank 0")) << r.err;
  EXPECT_EQ(r.out, "");
}

// Node 0's launcher hosts the store; when it dies the others cannot go on:
// they stop their ranks and exit 1 with a message, instead of hanging.
TEST(LaunchNodes, LosingNode0sLauncherEndsTheOtherNodes) {
  const std::string dir = make_temp_dir();
  const int port = pick_free_port_pair("127.0.0.1");
  LauncherRun node0(node_args(0, 2, port, {}, {"pidfile", dir + "/r0", "sleep", "60"}), token_and_tmpdir(dir));
  LauncherRun node1(node_args(1, 2, port, {}, {"pidfile", dir + "/r1", "sleep", "60"}), kToken);
  const pid_t rank0 = read_pid_file(dir + "/r0", 30);
  const pid_t rank1 = read_pid_file(dir + "/r1", 30);
  ASSERT_GT(rank0, 0);
  ASSERT_GT(rank1, 0);
  ASSERT_EQ(::kill(node0.pid(), SIGKILL), 0);
  const RunResult r1 = node1.finish(30);
  ::kill(rank0, SIGKILL);  // orphaned by its launcher's death
  EXPECT_EQ(r1.exit_code, 1) << r1.err;
  EXPECT_TRUE(contains(r1.err, "lost the connection to node 0's launcher, which hosts the job's store: the "
                               "rendezvous store at 127.0.0.1:" + std::to_string(port)))
      << r1.err;
  EXPECT_TRUE(contains(r1.err, "stopping this node's ranks")) << r1.err;
  EXPECT_TRUE(wait_until_dead(rank1, 5)) << "node 1's rank was not stopped";
  std::filesystem::remove_all(dir);
}

TEST(LaunchNodes, ASignalToOneLauncherEndsTheJobOnEveryNode) {
  const std::string dir = make_temp_dir();
  const int port = pick_free_port_pair("127.0.0.1");
  LauncherRun node0(node_args(0, 2, port, {"--max_restarts", "3"}, {"pidfile", dir + "/r0", "sleep", "60"}), kToken);
  LauncherRun node1(node_args(1, 2, port, {"--max_restarts", "3"}, {"pidfile", dir + "/r1", "sleep", "60"}), kToken);
  ASSERT_GT(read_pid_file(dir + "/r0", 30), 0);
  ASSERT_GT(read_pid_file(dir + "/r1", 30), 0);
  ASSERT_EQ(::kill(node1.pid(), SIGTERM), 0);
  const RunResult r1 = node1.finish(30);
  const RunResult r0 = node0.finish(30);
  EXPECT_EQ(r1.exit_code, 128 + SIGTERM) << r1.err;
  EXPECT_EQ(r0.exit_code, 1) << r0.err;
  EXPECT_TRUE(contains(r0.err, "ending the job: node 1's launcher got SIGTERM")) << r0.err;
  EXPECT_FALSE(contains(r0.err, "restarting")) << r0.err;
  std::filesystem::remove_all(dir);
}

// Whichever launcher comes second is refused; the other then ends the job
// for want of it.
TEST(LaunchNodes, NodesWithDifferentFlagsAreAnError) {
  const int port = pick_free_port_pair("127.0.0.1");
  LauncherRun node0(node_args(0, 2, port, {"--max_restarts", "1", "--join_timeout", "2"}, {"print", "ran"}), kToken);
  LauncherRun node1(node_args(1, 2, port, {"--max_restarts", "2", "--join_timeout", "2"}, {"print", "ran"}), kToken);
  const RunResult r0 = node0.finish(30);
  const RunResult r1 = node1.finish(30);
  EXPECT_EQ(r0.exit_code, 1) << r0.err;
  EXPECT_EQ(r1.exit_code, 1) << r1.err;
  const std::string both = r0.err + r1.err;
  EXPECT_TRUE(contains(both, "but the job's first launcher had --nnodes 2 --nproc_per_node 1 --max_restarts ")) << both;
  EXPECT_TRUE(contains(both, "; give every node the same flags")) << both;
  EXPECT_EQ(r0.out + r1.out, "") << "no rank may start";
}

// torchrun's --rdzv-id is the job's TORCHELASTIC_RUN_ID on every node, so
// nodes that disagree on it are refused like any other flag mismatch.
TEST(LaunchNodes, RdzvIdIsTheRunIdOfEveryNode) {
  const int port = pick_free_port_pair("127.0.0.1");
  const std::vector<std::string> env_run_id = {"env", "TORCHELASTIC_RUN_ID"};
  LauncherRun node0(node_args(0, 2, port, {"--rdzv-id", "job-7"}, env_run_id), kToken);
  LauncherRun node1(node_args(1, 2, port, {"--rdzv_id=job-7"}, env_run_id), kToken);
  const RunResult r0 = node0.finish(30);
  const RunResult r1 = node1.finish(30);
  ASSERT_EQ(r0.exit_code, 0) << r0.err;
  ASSERT_EQ(r1.exit_code, 0) << r1.err;
  EXPECT_EQ(r0.out, "[rank0]: TORCHELASTIC_RUN_ID=job-7\n");
  EXPECT_EQ(r1.out, "[rank1]: TORCHELASTIC_RUN_ID=job-7\n");

  const int port2 = pick_free_port_pair("127.0.0.1");
  LauncherRun a(node_args(0, 2, port2, {"--rdzv-id", "job-7", "--join_timeout", "2"}, env_run_id), kToken);
  LauncherRun b(node_args(1, 2, port2, {"--rdzv-id", "job-8", "--join_timeout", "2"}, env_run_id), kToken);
  const RunResult ra = a.finish(30);
  const RunResult rb = b.finish(30);
  EXPECT_EQ(ra.exit_code + rb.exit_code, 2) << ra.err << rb.err;
  EXPECT_TRUE(contains(ra.err + rb.err, "--rdzv-id job-")) << ra.err << rb.err;
  EXPECT_EQ(ra.out + rb.out, "") << "no rank may start";
}

TEST(LaunchNodes, TwoLaunchersWithOneNodeRankAreAnError) {
  const std::string dir = make_temp_dir();
  const int port = pick_free_port_pair("127.0.0.1");
  const std::vector<std::string> actions = {"pidfile", dir + "/r", "wait-file", dir + "/go", "print", "ran"};
  LauncherRun node0(node_args(0, 2, port, {}, actions), kToken);
  LauncherRun node1(node_args(1, 2, port, {}, actions), kToken);
  ASSERT_GT(read_pid_file(dir + "/r", 30), 0);
  RunResult again = run_paisoar(node_args(1, 2, port, {}, {"print", "ran"}), kToken);
  touch(dir + "/go");
  EXPECT_EQ(again.exit_code, 1) << again.err;
  EXPECT_TRUE(contains(again.err, "already joined this job as node 1; give every node its own --node_rank"))
      << again.err;
  EXPECT_EQ(again.out, "");
  const RunResult r0 = node0.finish(30);
  const RunResult r1 = node1.finish(30);
  EXPECT_EQ(r0.exit_code, 0) << r0.err;
  EXPECT_EQ(r1.exit_code, 0) << r1.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace paisoar::launch::testing
