// Process tests with real torch.distributed programs (torch 2.x, under
// PAISOAR_PYTHON; see CMakeLists.txt): torch's own TCPStore client is served
// by the launcher's store for every query it has, answering as torch's own
// store does (tcpstore_client_check.py); the environment the launcher sets is
// enough for init_process_group("gloo") on one node and across two
// launchers acting as two nodes (torch hosts its own store on MASTER_PORT =
// --master_port + 1, next to the launcher's), also when the launcher's own
// environment says TORCHELASTIC_USE_AGENT_STORE=True; the error torch's
// @record leaves in TORCHELASTIC_ERROR_FILE is printed; a Ctrl-C forwarded by
// a launcher that inherited SIGINT ignored is a KeyboardInterrupt in the
// ranks. A .py program runs
// under the Python paisoar was built with, not the first python3 on PATH,
// and ranks under a Python without torch are reported with its path and what
// to do. Without a configured Python these tests fail, saying how to
// configure one.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "launch/free_port.h"
#include "launcher_runner.h"

namespace paisoar::launch::testing {
namespace {

// Fails the test (never skips it) when no Python was configured.
#define REQUIRE_TORCH_PYTHON()                                                                  \
  if (std::string(TORCH_PYTHON).empty())                                                        \
  FAIL() << "no Python with torch 2.x is configured for the torch.distributed tests: configure " \
            "with -DPAISOAR_PYTHON=/path/to/python (e.g. the project's .venv/bin/python from "   \
            "scripts/setup.sh) and rebuild"

std::vector<std::string> python_env() {
  return {std::string("PAISOAR_PYTHON=") + TORCH_PYTHON, "GLOO_SOCKET_IFNAME=lo",
          "PYTHONUNBUFFERED=1"};
}

void expect_ok(const RunResult& r, int rank, int world) {
  const std::string ok = "[rank" + std::to_string(rank) + "]: OK rank=" + std::to_string(rank) +
                         " world=" + std::to_string(world) +
                         " sum=" + std::to_string(world * (world + 1) / 2) + "\n";
  EXPECT_NE(r.out.find(ok), std::string::npos) << "stdout:\n" << r.out << "stderr:\n" << r.err;
}

TEST(LaunchPython, TorchsTcpStoreClientIsServedForEveryQuery) {
  REQUIRE_TORCH_PYTHON();
  RunResult r = run_paisoar({"launch", "--nproc_per_node", "2", "--master_port", "0",
                             "--omp_num_threads", "1", TCPSTORE_CLIENT_CHECK},
                            python_env());
  ASSERT_EQ(r.exit_code, 0) << "stdout:\n" << r.out << "stderr:\n" << r.err;
  EXPECT_NE(r.out.find("calls answered as torch's own store answers them"), std::string::npos)
      << r.out;
  for (int rank : {0, 1})
    EXPECT_NE(r.out.find("[rank" + std::to_string(rank) + "]: OK rank=" + std::to_string(rank) + "\n"),
              std::string::npos)
        << r.out;
  // Each rank's wrong-token client was refused and logged.
  EXPECT_NE(r.err.find("wrong job token"), std::string::npos) << r.err;
}

TEST(LaunchPython, TheErrorTorchsRecordWroteIsPrinted) {
  REQUIRE_TORCH_PYTHON();
  RunResult r = run_paisoar({"launch", "--nproc_per_node", "2", "--master_port", "0",
                             RECORD_ERROR_CHECK},
                            python_env());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("paisoar launch: rank 1 reported (TORCHELASTIC_ERROR_FILE): ValueError: "
                       "rank 1 could not read its shard\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("cannot import torch"), std::string::npos) << "its Python has torch: " << r.err;
}

// A Python without torch, as the first python3 on PATH often is: the
// configured one run isolated (-I) and without site-packages (-S).
std::string write_python_without_torch(const std::filesystem::path& path) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << "#!/bin/sh\nexec '" << TORCH_PYTHON << "' -I -S \"$@\"\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path.string();
}

// torchrun runs ranks under its own Python; the launcher under the one its
// torch came from, whatever python3 PATH finds first.
TEST(LaunchPython, ScriptsRunUnderThePythonPaisoarWasBuiltWithNotTheFirstOnPath) {
  REQUIRE_TORCH_PYTHON();
  if (std::string(TORCH_PYTHON).find('/') == std::string::npos)
    FAIL() << "PAISOAR_PYTHON is '" << TORCH_PYTHON << "', not a path: configure with "
           << "-DPAISOAR_PYTHON=/path/to/python";
  const std::filesystem::path dir = make_temp_dir();
  write_python_without_torch(dir / "python3");
  const char* path = std::getenv("PATH");
  RunResult r = run_paisoar({"launch", "--master_port", "0", INTERPRETER_CHECK},
                            {"PAISOAR_PYTHON", "PYTHON_EXEC",
                             "PATH=" + dir.string() + ":" + (path != nullptr ? path : "/usr/bin:/bin")});
  ASSERT_EQ(r.exit_code, 0) << "stdout:\n" << r.out << "stderr:\n" << r.err;
  auto values = values_by_rank(r.out);
  EXPECT_EQ(values[0]["EXECUTABLE"], TORCH_PYTHON) << r.out;
  EXPECT_EQ(values[0]["TORCH"].rfind("2.", 0), 0u) << r.out;
  std::filesystem::remove_all(dir);
}

TEST(LaunchPython, APythonWithoutTorchIsNamedWithWhatToDo) {
  REQUIRE_TORCH_PYTHON();
  const std::filesystem::path dir = make_temp_dir();
  const std::string python = write_python_without_torch(dir / "bin" / "python-without-torch");
  RunResult r = run_paisoar({"launch", "--master_port", "0", "--nproc_per_node", "2",
                             "--max_restarts", "1", INTERPRETER_CHECK},
                            {"PAISOAR_PYTHON=" + python});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("ModuleNotFoundError: No module named 'torch'"), std::string::npos) << r.err;
  const std::string words =
      "paisoar launch: the ranks ran under Python '" + python + "' ($PAISOAR_PYTHON), which cannot "
      "import torch: it finds no torch package. Set PAISOAR_PYTHON to the Python of an environment "
      "with torch and paisoar, e.g. PAISOAR_PYTHON=" + TORCH_PYTHON +
      " (the Python this paisoar was built with).\n";
  const std::size_t at = r.err.find(words);
  EXPECT_NE(at, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(words, at + 1), std::string::npos) << "said once, not at every restart: " << r.err;
  std::filesystem::remove_all(dir);
}

// `paisoar launch ... &` in a shell script starts the launcher with SIGINT
// ignored; a Ctrl-C forwarded to it must still reach the ranks as
// KeyboardInterrupt (PyTorch Lightning's graceful shutdown), as under
// torchrun, instead of a SIGKILL at the end of the grace period.
TEST(LaunchPython, ForwardedCtrlCIsAKeyboardInterruptWhenTheLauncherInheritedSigintIgnored) {
  REQUIRE_TORCH_PYTHON();
  LauncherRun run({"launch", "--master_port", "0", "--nproc_per_node", "2", "--grace_period", "30",
                   INTERRUPT_CHECK},
                  python_env(), PAISOAR_BIN, InheritedSignals{{SIGINT, SIGQUIT}, {}});
  ASSERT_TRUE(run.wait_for_stdout("READY", 2, 30)) << "ranks did not start";
  kill(run.pid(), SIGINT);
  RunResult r = run.finish();
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.out.find("[rank0]: graceful shutdown\n"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("[rank1]: graceful shutdown\n"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.err.find("sending SIGKILL"), std::string::npos) << r.err;
}

TEST(LaunchPython, AllreduceOnOneNode) {
  REQUIRE_TORCH_PYTHON();
  RunResult r = run_paisoar({"launch", "--nproc_per_node", "2", "--master_port", "0",
                             "--omp_num_threads", "1", ALLREDUCE_CHECK, "2"},
                            python_env());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  expect_ok(r, 0, 2);
  expect_ok(r, 1, 2);
}

// torch 2.x's env:// makes every rank a client of MASTER_ADDR:MASTER_PORT
// when TORCHELASTIC_USE_AGENT_STORE=True (torchrun's agent hosts a store
// there). The launcher's store asks for the job token, which torch's env://
// cannot show, so the launcher sets it to False: rank 0 hosts torch's store,
// even when the launcher itself runs inside a torchrun worker.
TEST(LaunchPython, AllreduceWhenTheLauncherInheritsUseAgentStore) {
  REQUIRE_TORCH_PYTHON();
  std::vector<std::string> env = python_env();
  env.push_back("TORCHELASTIC_USE_AGENT_STORE=True");
  RunResult r = run_paisoar({"launch", "--nproc_per_node", "2", "--master_port", "0",
                             "--omp_num_threads", "1", ALLREDUCE_CHECK, "2"},
                            env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  expect_ok(r, 0, 2);
  expect_ok(r, 1, 2);
}

// Two launchers acting as two nodes of 2 ranks each run `script` (with
// argument "4"): the launcher of node 0 hosts its store on P; rank 0 hosts
// torch's on P + 1. Returns node 0's and node 1's results.
std::pair<RunResult, RunResult> run_on_two_nodes(const std::string& script, const std::string& token) {
  const std::string port = std::to_string(pick_free_port_pair("127.0.0.1"));
  std::vector<std::string> env = python_env();
  env.push_back("PAISOAR_JOB_TOKEN=" + token);
  auto node = [&](int node_rank) {
    return std::vector<std::string>{"launch", "--nnodes", "2", "--node_rank",
                                    std::to_string(node_rank), "--nproc_per_node", "2",
                                    "--master_addr", "127.0.0.1", "--master_port", port,
                                    "--omp_num_threads", "1", script, "4"};
  };
  LauncherRun node0(node(0), env);
  LauncherRun node1(node(1), env);
  RunResult r0 = node0.finish();
  RunResult r1 = node1.finish();
  return {r0, r1};
}

TEST(LaunchPython, TwoLaunchersFormOneGroup) {
  REQUIRE_TORCH_PYTHON();
  const auto [r0, r1] = run_on_two_nodes(ALLREDUCE_CHECK, "python-two-nodes");
  ASSERT_EQ(r0.exit_code, 0) << r0.out << r0.err;
  ASSERT_EQ(r1.exit_code, 0) << r1.out << r1.err;
  expect_ok(r0, 0, 4);
  expect_ok(r0, 1, 4);
  expect_ok(r1, 2, 4);
  expect_ok(r1, 3, 4);
}

void expect_trained(const RunResult& r, int rank, int world) {
  const std::string line = "[rank" + std::to_string(rank) + "]: TRAINED rank=" + std::to_string(rank) +
                           " world=" + std::to_string(world) + " loss ";
  EXPECT_NE(r.out.find(line), std::string::npos) << "stdout:\n" << r.out << "stderr:\n" << r.err;
}

// A torch.distributed training script (PyTorch's DDP over gloo) trains under
// the launcher, and ends where one process over the whole batch ends.
TEST(LaunchPython, DdpScriptTrainsOnTwoRanks) {
  REQUIRE_TORCH_PYTHON();
  RunResult r = run_paisoar({"launch", "--nproc_per_node", "2", "--master_port", "0",
                             "--omp_num_threads", "1", DDP_TRAIN_CHECK, "2"},
                            python_env());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  expect_trained(r, 0, 2);
  expect_trained(r, 1, 2);
}

// The same across two launchers acting as two nodes of 2 ranks each.
TEST(LaunchPython, DdpScriptTrainsOnTwoNodes) {
  REQUIRE_TORCH_PYTHON();
  const auto [r0, r1] = run_on_two_nodes(DDP_TRAIN_CHECK, "python-ddp-two-nodes");
  ASSERT_EQ(r0.exit_code, 0) << r0.out << r0.err;
  ASSERT_EQ(r1.exit_code, 0) << r1.out << r1.err;
  for (int rank : {0, 1}) expect_trained(r0, rank, 4);
  for (int rank : {2, 3}) expect_trained(r1, rank, 4);
}

}  // namespace
}  // namespace paisoar::launch::testing
