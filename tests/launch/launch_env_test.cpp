// Process tests: the environment each rank sees (torchrun's variables),
// for one node and for node 1 of two, OMP_NUM_THREADS rules, port 0, the
// rendezvous store's address and the job token.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>

#include "launch/free_port.h"
#include "launch/rank_env.h"
#include "launch/unique_fd.h"
#include "launcher_runner.h"

namespace paisoar::launch::testing {
namespace {

const std::vector<std::string> kPrintEnv = {
    "env", "RANK", "env", "LOCAL_RANK", "env", "WORLD_SIZE", "env", "LOCAL_WORLD_SIZE",
    "env", "GROUP_RANK", "env", "ROLE_RANK", "env", "ROLE_WORLD_SIZE", "env", "MASTER_ADDR",
    "env", "MASTER_PORT", "env", "OMP_NUM_THREADS", "env", "TORCHELASTIC_RESTART_COUNT",
    "env", "TORCHELASTIC_MAX_RESTARTS", "env", "TORCHELASTIC_RUN_ID", "env",
    "PAISOAR_RESTART_COUNT", "env", "FROM_THE_TEST", "env", "PAISOAR_STORE_ADDR", "env",
    "PAISOAR_STORE_PORT", "env", "PAISOAR_JOB_TOKEN", "env", "GROUP_WORLD_SIZE", "env",
    "ROLE_NAME", "env", "TORCHELASTIC_USE_AGENT_STORE", "env", "TORCH_NCCL_ASYNC_ERROR_HANDLING",
    "env", "TORCHELASTIC_ERROR_FILE"};

TEST(LaunchEnv, TwoRanksGetTorchrunVariables) {
  const int port = pick_free_port_pair("127.0.0.1");
  RunResult r = run_paisoar(
      probe_launch({"--nproc_per_node", "2", "--master_port", std::to_string(port)}, kPrintEnv),
      {"OMP_NUM_THREADS", "FROM_THE_TEST=kept", "PAISOAR_JOB_TOKEN", "TORCH_NCCL_ASYNC_ERROR_HANDLING",
       "TORCHELASTIC_USE_AGENT_STORE=True"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto values = values_by_rank(r.out);
  ASSERT_EQ(values.size(), 2u) << r.out;
  const std::string omp = std::to_string(std::max(1, available_cpus() / 2));
  for (int rank = 0; rank < 2; ++rank) {
    auto& v = values[rank];
    EXPECT_EQ(v["RANK"], std::to_string(rank));
    EXPECT_EQ(v["LOCAL_RANK"], std::to_string(rank));
    EXPECT_EQ(v["WORLD_SIZE"], "2");
    EXPECT_EQ(v["LOCAL_WORLD_SIZE"], "2");
    EXPECT_EQ(v["GROUP_RANK"], "0");
    EXPECT_EQ(v["ROLE_RANK"], std::to_string(rank));
    EXPECT_EQ(v["ROLE_WORLD_SIZE"], "2");
    EXPECT_EQ(v["MASTER_ADDR"], "127.0.0.1");
    // The launcher's store at --master_port; MASTER_PORT for a store the rank hosts itself.
    EXPECT_EQ(v["MASTER_PORT"], std::to_string(port + 1));
    EXPECT_EQ(v["PAISOAR_STORE_ADDR"], "127.0.0.1");
    EXPECT_EQ(v["PAISOAR_STORE_PORT"], std::to_string(port));
    EXPECT_EQ(v["PAISOAR_JOB_TOKEN"].size(), 32u) << "a token made by the launcher";
    EXPECT_EQ(v["OMP_NUM_THREADS"], omp);
    EXPECT_EQ(v["TORCHELASTIC_RESTART_COUNT"], "0");
    EXPECT_EQ(v["TORCHELASTIC_MAX_RESTARTS"], "0");
    EXPECT_EQ(v["PAISOAR_RESTART_COUNT"], "0");
    EXPECT_EQ(v["FROM_THE_TEST"], "kept");
    EXPECT_EQ(v["TORCHELASTIC_RUN_ID"].size(), 16u);
    EXPECT_EQ(v["GROUP_WORLD_SIZE"], "1");
    EXPECT_EQ(v["ROLE_NAME"], "default");
    EXPECT_EQ(v["TORCHELASTIC_USE_AGENT_STORE"], "False") << "not the launcher's inherited True";
    EXPECT_EQ(v["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "1");
    EXPECT_NE(v["TORCHELASTIC_ERROR_FILE"].find("/rank_" + std::to_string(rank) + ".error.json"),
              std::string::npos)
        << v["TORCHELASTIC_ERROR_FILE"];
  }
  EXPECT_NE(values[0]["TORCHELASTIC_ERROR_FILE"], values[1]["TORCHELASTIC_ERROR_FILE"]);
  EXPECT_EQ(values[0]["TORCHELASTIC_RUN_ID"], values[1]["TORCHELASTIC_RUN_ID"]);
  EXPECT_EQ(values[0]["PAISOAR_JOB_TOKEN"], values[1]["PAISOAR_JOB_TOKEN"]);
}

TEST(LaunchEnv, TheJobTokenComesFromTheEnvironmentWhenSet) {
  RunResult r = run_paisoar(probe_launch({"--nproc_per_node", "2"}, {"env", "PAISOAR_JOB_TOKEN"}),
                            {"PAISOAR_JOB_TOKEN=from-the-user"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto values = values_by_rank(r.out);
  EXPECT_EQ(values[0]["PAISOAR_JOB_TOKEN"], "from-the-user");
  EXPECT_EQ(values[1]["PAISOAR_JOB_TOKEN"], "from-the-user");
}

// Node 1's launcher needs node 0's (it joins the job through its store), so
// both run here, on 127.0.0.1.
TEST(LaunchEnv, SecondNodeOfTwoGetsGlobalRanks) {
  const std::string port = std::to_string(pick_free_port_pair("127.0.0.1"));
  auto node = [&](int k) {
    return probe_launch({"--nnodes", "2", "--node_rank", std::to_string(k), "--nproc_per_node", "2",
                         "--master_addr", "127.0.0.1", "--master_port", port},
                        kPrintEnv);
  };
  LauncherRun node0(node(0), {"PAISOAR_JOB_TOKEN=shared"});
  RunResult r = run_paisoar(node(1), {"PAISOAR_JOB_TOKEN=shared"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RunResult r0 = node0.finish();
  EXPECT_EQ(r0.exit_code, 0);
  auto values = values_by_rank(r.out);
  ASSERT_EQ(values.size(), 2u) << r.out;
  // One run id for the whole job, as torchrun's.
  EXPECT_EQ(values_by_rank(r0.out)[0]["TORCHELASTIC_RUN_ID"], values[2]["TORCHELASTIC_RUN_ID"]);
  EXPECT_EQ(values[2]["TORCHELASTIC_RUN_ID"].size(), 16u);
  for (int rank : {2, 3}) {
    auto& v = values[rank];
    EXPECT_EQ(v["RANK"], std::to_string(rank));
    EXPECT_EQ(v["LOCAL_RANK"], std::to_string(rank - 2));
    EXPECT_EQ(v["WORLD_SIZE"], "4");
    EXPECT_EQ(v["LOCAL_WORLD_SIZE"], "2");
    EXPECT_EQ(v["GROUP_RANK"], "1");
    EXPECT_EQ(v["MASTER_ADDR"], "127.0.0.1");
    EXPECT_EQ(v["MASTER_PORT"], std::to_string(std::stoi(port) + 1));
    EXPECT_EQ(v["PAISOAR_STORE_ADDR"], "127.0.0.1");  // node 0's launcher; this one hosts none
    EXPECT_EQ(v["PAISOAR_STORE_PORT"], port);
    EXPECT_EQ(v["PAISOAR_JOB_TOKEN"], "shared");
  }
}

TEST(LaunchEnv, TorchrunsRendezvousAndRoleFlags) {
  const int port = pick_free_port_pair("127.0.0.1");
  RunResult r = run_paisoar(probe_launch(
      {"--nproc-per-node", "cpu", "--rdzv-backend", "c10d", "--rdzv-endpoint",
       "127.0.0.1:" + std::to_string(port), "--rdzv-id", "my-job", "--role", "trainer"},
      kPrintEnv));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto values = values_by_rank(r.out);
  ASSERT_EQ(values.size(), static_cast<std::size_t>(available_cpus())) << "one rank per CPU";
  EXPECT_EQ(values[0]["LOCAL_WORLD_SIZE"], std::to_string(available_cpus()));
  EXPECT_EQ(values[0]["TORCHELASTIC_RUN_ID"], "my-job");
  EXPECT_EQ(values[0]["ROLE_NAME"], "trainer");
  EXPECT_EQ(values[0]["PAISOAR_STORE_PORT"], std::to_string(port)) << "the endpoint is the store";
  EXPECT_EQ(values[0]["MASTER_PORT"], std::to_string(port + 1));
}

TEST(LaunchEnv, OmpNumThreadsFromUserOrFlag) {
  RunResult user = run_paisoar(probe_launch({}, {"env", "OMP_NUM_THREADS"}),
                               {"OMP_NUM_THREADS=7"});
  ASSERT_EQ(user.exit_code, 0) << user.err;
  EXPECT_EQ(values_by_rank(user.out)[0]["OMP_NUM_THREADS"], "7");
  RunResult flag = run_paisoar(probe_launch({"--omp_num_threads", "3"}, {"env", "OMP_NUM_THREADS"}),
                               {"OMP_NUM_THREADS=7"});
  ASSERT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_EQ(values_by_rank(flag.out)[0]["OMP_NUM_THREADS"], "3");
}

TEST(LaunchEnv, MasterPortZeroPicksAUsablePort) {
  RunResult r =
      run_paisoar(probe_launch({"--nproc_per_node", "2", "--master_port", "0"}, kPrintEnv));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto values = values_by_rank(r.out);
  const std::string port = values[0]["MASTER_PORT"];
  ASSERT_FALSE(port.empty()) << r.out;
  EXPECT_EQ(values[1]["MASTER_PORT"], port);
  int p = std::stoi(port);
  EXPECT_EQ(values[0]["PAISOAR_STORE_PORT"], std::to_string(p - 1));
  EXPECT_GT(p, 0);
  EXPECT_LE(p, 65535);
  // Usable: a TCP server can listen on it (what rank 0's store will do).
  UniqueFd sock(socket(AF_INET, SOCK_STREAM, 0));
  int one = 1;
  setsockopt(sock.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(p));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(listen(sock.get(), 1), 0);
}

}  // namespace
}  // namespace paisoar::launch::testing
