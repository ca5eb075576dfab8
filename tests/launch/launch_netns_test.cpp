// The multi-node test: two "nodes" as network namespaces joined by a
// veth pair (two_node_network.h), each running its own `paisoar launch`
// (--nnodes 2, one rank) of a `paisoar train` run whose ranks meet at node
// 0's address, 10.77.0.1, the only way between the namespaces. The rank on
// node 2 (node_rank 1) is killed with SIGKILL mid-run: both launchers stop
// their ranks, restart them together, the run resumes from its checkpoint
// and completes, and both launchers exit 0. Skipped where `ip netns` is not
// permitted.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

#include "launcher_runner.h"
#include "two_node_network.h"

namespace paisoar::launch::testing {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(TwoNodeNamespaces, KillingTheRankOnNode2RestartsTheJobOnBothNodes) {
  TwoNodeNetwork net;
  if (!net.ok()) GTEST_SKIP() << "two network namespaces cannot be set up here: " << net.why();
  const std::string dir = make_temp_dir();
  auto node = [&](int k) {
    std::vector<std::string> args = net.exec_in(k);
    const std::vector<std::string> launch = {
        PAISOAR_BIN, "launch", "--nnodes", "2", "--node_rank", std::to_string(k), "--master_addr", net.address(0),
        "--master_port", "29500", "--max_restarts", "1", "--grace_period", "2", "--join_timeout", "30",
        "--omp_num_threads", "1", "--",
        PAISOAR_BIN, "train", "--set", "amp.dtype=fp32", "--set", "data.train_limit=3200", "--set",
        "data.eval_limit=64", "--set", "data.workers=1", "--set", "train.batch_size=64", "--set",
        "train.log_every=1", "--set", "checkpoint.every_steps=3", "--set", "checkpoint.keep_last=3", "--set",
        "profiler.enabled=false", "--set", "run_dir=" + dir + "/run"};
    args.insert(args.end(), launch.begin(), launch.end());
    return args;
  };
  const std::vector<std::string> env = {"PAISOAR_JOB_TOKEN=two-namespaces"};
  LauncherRun node0(node(0), env, net.ip());
  LauncherRun node1(node(1), env, net.ip());
  ASSERT_TRUE(node0.wait_for_stdout("[rank0]: epoch 0 step 4/", 1, 120)) << "the run did not get going";
  const pid_t rank1 = child_with_rank(node1.pid(), 1);
  ASSERT_GT(rank1, 0) << "the rank on node 2 was not found among its launcher's children";
  ASSERT_EQ(::kill(rank1, SIGKILL), 0);

  const RunResult r0 = node0.finish(240);
  const RunResult r1 = node1.finish(240);
  ASSERT_EQ(r0.exit_code, 0) << r0.out << r0.err;
  ASSERT_EQ(r1.exit_code, 0) << r1.out << r1.err;
  const std::string death = "rank 1 (local_rank 0, pid " + std::to_string(rank1) + ") was killed by signal 9 (SIGKILL)";
  EXPECT_TRUE(contains(r1.err, death)) << r1.err;
  EXPECT_TRUE(contains(r0.err, "node 1 failed: " + death + "; stopping this node's ranks")) << r0.err;
  for (const RunResult* r : {&r0, &r1}) {
    EXPECT_TRUE(contains(r->err, "restarting the job on all 2 nodes (restart 1 of 1)")) << r->err;
  }
  EXPECT_TRUE(contains(r0.out, ".safetensors at step ")) << "the restart resumes from a checkpoint\n" << r0.out;
  EXPECT_TRUE(contains(r0.out, "[rank0]: epoch 0 step 50/50")) << "the run completes\n" << r0.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace paisoar::launch::testing
