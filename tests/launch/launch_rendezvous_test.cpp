// Process tests of the launcher's rendezvous store: it listens on
// --master_addr only, a connection with a wrong job token is refused and
// logged while the job runs on and exits 0, so is a client of LibTorch
// 1.13's protocol, with a message naming both protocols; a busy port and a multi-node job
// without an exported token are clear errors. The ranks are launch_probe
// programs that wait for a file, so the store is probed while the job runs.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <filesystem>
#include <fstream>

#include "launch/free_port.h"
#include "launcher_runner.h"
#include "store_test_client.h"

namespace paisoar::launch::testing {
namespace {

// Two probe ranks that say "up", wait for `go_file`, then say "done".
std::vector<std::string> waiting_job(int port, const std::string& go_file) {
  return probe_launch({"--nproc_per_node", "2", "--master_port", std::to_string(port)},
                      {"print", "up", "wait-file", go_file, "print", "done"});
}

void touch(const std::string& path) { std::ofstream(path) << "go\n"; }

TEST(LaunchRendezvous, TheStoreListensOnTheMasterAddressOnly) {
  const int port = pick_free_port_pair("127.0.0.1");
  const std::string go = make_temp_dir() + "/go";
  LauncherRun run(waiting_job(port, go));
  ASSERT_TRUE(run.wait_for_stdout("up", 2, 30));
  StoreTestClient via_master_addr("127.0.0.1", port);
  EXPECT_TRUE(via_master_addr.connected());
  // 127.0.0.2 is this machine too: a store on the wildcard address would take it.
  StoreTestClient via_other_address("127.0.0.2", port);
  EXPECT_FALSE(via_other_address.connected());
  EXPECT_EQ(via_other_address.connect_error(), ECONNREFUSED);
  touch(go);
  RunResult r = run.finish();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  std::filesystem::remove_all(std::filesystem::path(go).parent_path());
}

// The test: a process with a wrong token trying to join is refused,
// and the job is unaffected.
TEST(LaunchRendezvous, AWrongTokenIsRefusedAndTheJobGoesOn) {
  const int port = pick_free_port_pair("127.0.0.1");
  const std::string go = make_temp_dir() + "/go";
  LauncherRun run(waiting_job(port, go), {"PAISOAR_JOB_TOKEN=the-jobs-token"});
  ASSERT_TRUE(run.wait_for_stdout("up", 2, 30));

  StoreTestClient intruder("127.0.0.1", port);
  ASSERT_TRUE(intruder.connected());
  ASSERT_TRUE(intruder.handshake());
  intruder.send_token("a-guessed-token");
  std::string answer;
  ASSERT_TRUE(intruder.read_bytes_reply(&answer));
  EXPECT_EQ(answer, "");
  EXPECT_TRUE(intruder.closed_by_server());
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  ::getsockname(intruder.fd(), reinterpret_cast<sockaddr*>(&local), &len);
  const std::string refusal = "paisoar launch: refused a connection from 127.0.0.1:" +
                              std::to_string(ntohs(local.sin_port)) + ": wrong job token\n";

  // The store still serves a process with the right token.
  StoreTestClient member("127.0.0.1", port);
  ASSERT_TRUE(member.handshake());
  member.send_token("the-jobs-token");
  ASSERT_TRUE(member.read_bytes_reply(&answer));
  EXPECT_EQ(answer, "the-jobs-token");

  touch(go);
  RunResult r = run.finish();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find(refusal), std::string::npos) << r.err;
  for (int rank : {0, 1}) {
    EXPECT_NE(r.out.find("[rank" + std::to_string(rank) + "]: done\n"), std::string::npos) << r.out;
  }
  std::filesystem::remove_all(std::filesystem::path(go).parent_path());
}

// A rank built on LibTorch 1.13 (its TCPStore has no validation handshake)
// is told, through the launcher's log, that the protocols differ; it is not
// left hanging, and the job goes on.
TEST(LaunchRendezvous, AClientOfLibTorch113IsRefusedNamingBothProtocols) {
  const int port = pick_free_port_pair("127.0.0.1");
  const std::string go = make_temp_dir() + "/go";
  LauncherRun run(waiting_job(port, go), {"PAISOAR_JOB_TOKEN=the-jobs-token"});
  ASSERT_TRUE(run.wait_for_stdout("up", 2, 30));
  StoreTestClient old("127.0.0.1", port);
  ASSERT_TRUE(old.connected());
  // 1.13's first request, SET "/k" = "v": query type 0, then a uint64 length.
  old.send_raw(std::string(1, '\0') + std::string("\x02\0\0\0\0\0\0\0/k\x01\0\0\0\0\0\0\0v", 19));
  EXPECT_TRUE(old.closed_by_server());
  touch(go);
  RunResult r = run.finish();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("it speaks a TCPStore protocol older than LibTorch 2.x (no validation "
                       "handshake); this launcher speaks 2.x's"),
            std::string::npos)
      << r.err;
  std::filesystem::remove_all(std::filesystem::path(go).parent_path());
}

TEST(LaunchRendezvous, ABusyStorePortIsAClearError) {
  const int port = pick_free_port("127.0.0.1");
  UniqueFd holder(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(holder.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(holder.get(), 1), 0);
  RunResult r = run_paisoar(probe_launch({"--master_port", std::to_string(port)}, {"print", "x"}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot start the rendezvous store on 127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "") << "no rank may start without the store";
}

TEST(LaunchRendezvous, SeveralNodesNeedAnExportedToken) {
  RunResult r = run_paisoar(
      probe_launch({"--nnodes", "2", "--node_rank", "1", "--master_port", "1234"}, {"print", "x"}),
      {"PAISOAR_JOB_TOKEN"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("export the same PAISOAR_JOB_TOKEN on every node"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace
}  // namespace paisoar::launch::testing
