// Process tests with a real torch.distributed program: the environment the
// launcher sets is enough for init_process_group("gloo") on one node and
// across two launchers acting as two nodes (torch hosts its own store on
// MASTER_PORT = --master_port + 1, next to the launcher's). Skipped without a
// Python that can import torch (found by CMake, see CMakeLists.txt).
#include <gtest/gtest.h>

#include <string>

#include "launch/free_port.h"
#include "launcher_runner.h"

namespace paisoar::launch::testing {
namespace {

std::vector<std::string> python_env() {
  return {std::string("PAISOAR_PYTHON=") + TORCH_PYTHON, "GLOO_SOCKET_IFNAME=lo"};
}

void expect_ok(const RunResult& r, int rank, int world) {
  const std::string ok = "[rank" + std::to_string(rank) + "]: OK rank=" + std::to_string(rank) +
                         " world=" + std::to_string(world) +
                         " sum=" + std::to_string(world * (world + 1) / 2) + "\n";
  EXPECT_NE(r.out.find(ok), std::string::npos) << "stdout:\n" << r.out << "stderr:\n" << r.err;
}

TEST(LaunchPython, AllreduceOnOneNode) {
  if (std::string(TORCH_PYTHON).empty()) GTEST_SKIP() << "no Python with torch found by CMake";
  RunResult r = run_paisoar({"launch", "--nproc_per_node", "2", "--master_port", "0",
                             "--omp_num_threads", "1", ALLREDUCE_CHECK, "2"},
                            python_env());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  expect_ok(r, 0, 2);
  expect_ok(r, 1, 2);
}

TEST(LaunchPython, TwoLaunchersFormOneGroup) {
  if (std::string(TORCH_PYTHON).empty()) GTEST_SKIP() << "no Python with torch found by CMake";
  // The launcher of node 0 hosts its store on P; rank 0 hosts torch's on P + 1.
  const std::string port = std::to_string(pick_free_port_pair("127.0.0.1"));
  std::vector<std::string> env = python_env();
  env.push_back("PAISOAR_JOB_TOKEN=python-two-nodes");
  auto node = [&](int node_rank) {
    return std::vector<std::string>{"launch", "--nnodes", "2", "--node_rank",
                                    std::to_string(node_rank), "--nproc_per_node", "2",
                                    "--master_addr", "127.0.0.1", "--master_port", port,
                                    "--omp_num_threads", "1", ALLREDUCE_CHECK, "4"};
  };
  LauncherRun node0(node(0), env);
  LauncherRun node1(node(1), env);
  RunResult r0 = node0.finish();
  RunResult r1 = node1.finish();
  ASSERT_EQ(r0.exit_code, 0) << r0.out << r0.err;
  ASSERT_EQ(r1.exit_code, 0) << r1.out << r1.err;
  expect_ok(r0, 0, 4);
  expect_ok(r0, 1, 4);
  expect_ok(r1, 2, 4);
  expect_ok(r1, 3, 4);
}

}  // namespace
}  // namespace paisoar::launch::testing
