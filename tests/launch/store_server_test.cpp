// StoreServer over real sockets, with raw clients: bound to the address given
// and no other; a connection is served only after 2.x's validation handshake
// and the job token; a client of LibTorch 1.13's protocol (no handshake), a
// wrong token or any other first request is refused, logged with the peer's
// address, and the other clients go on; a WAIT is answered by another
// connection's write; the wildcard address and a busy port are clear errors.
#include "launch/rendezvous/store_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>

#include "store_test_client.h"

namespace paisoar::launch::testing {
namespace {

using store::QueryType;
using store::Request;

// A StoreServer on 127.0.0.1 with a free port whose log goes to a pipe.
struct LoggedServer {
  UniqueFd log_read;
  UniqueFd log_write;
  std::string log;
  std::unique_ptr<StoreServer> server;

  explicit LoggedServer(const std::string& token = "right-token") {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
    log_read.reset(fds[0]);
    log_write.reset(fds[1]);
    StoreServerOptions o;
    o.host = "127.0.0.1";
    o.port = 0;
    o.token = token;
    o.log_fd = log_write.get();
    server = std::make_unique<StoreServer>(o);
  }

  // Reads the log until `needle` appears; false after `timeout_s`.
  bool wait_for_log(const std::string& needle, double timeout_s = 10) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (log.find(needle) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      pollfd p{log_read.get(), POLLIN, 0};
      ::poll(&p, 1, 50);
      char buf[4096];
      const ssize_t n = ::read(log_read.get(), buf, sizeof(buf));
      if (n > 0) log.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  }
};

Request request(QueryType type, std::vector<std::string> keys, std::string value = "") {
  Request r;
  r.type = type;
  r.keys = std::move(keys);
  r.value = std::move(value);
  return r;
}

int local_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

std::string authenticated_get(StoreTestClient& c, const std::string& key) {
  c.send(request(QueryType::kGet, {key}));
  std::string value;
  EXPECT_TRUE(c.read_bytes_reply(&value));
  return value;
}

TEST(StoreServer, ListensOnTheAddressGivenOnly) {
  LoggedServer s;
  EXPECT_EQ(s.server->address(), "127.0.0.1");
  EXPECT_GT(s.server->port(), 0);
  StoreTestClient via_loopback("127.0.0.1", s.server->port());
  EXPECT_TRUE(via_loopback.connected());
  // 127.0.0.2 is this machine too; a store on the wildcard would accept it.
  StoreTestClient via_other_local_address("127.0.0.2", s.server->port());
  EXPECT_FALSE(via_other_local_address.connected());
  EXPECT_EQ(via_other_local_address.connect_error(), ECONNREFUSED);
}

TEST(StoreServer, ServesAConnectionAfterTheHandshakeAndTheToken) {
  LoggedServer s;
  StoreTestClient c("127.0.0.1", s.server->port());
  ASSERT_TRUE(c.handshake());
  c.send_token("right-token");
  std::string answer;
  ASSERT_TRUE(c.read_bytes_reply(&answer));
  EXPECT_EQ(answer, "right-token");
  c.send(request(QueryType::kSet, {"/k"}, "v"));
  EXPECT_EQ(authenticated_get(c, "/k"), "v");
}

TEST(StoreServer, AWrongTokenIsRefusedLoggedAndTheOthersGoOn) {
  LoggedServer s;
  StoreTestClient rank("127.0.0.1", s.server->port());
  ASSERT_TRUE(rank.join("right-token"));
  rank.send(request(QueryType::kSet, {"/before"}, "1"));

  StoreTestClient intruder("127.0.0.1", s.server->port());
  ASSERT_TRUE(intruder.handshake());
  intruder.send_token("wrong-token");
  std::string answer;
  ASSERT_TRUE(intruder.read_bytes_reply(&answer));
  EXPECT_EQ(answer, "") << "a refusal is an empty value, never the real token";
  EXPECT_TRUE(intruder.closed_by_server());
  const std::string line = "refused a connection from 127.0.0.1:" +
                           std::to_string(local_port(intruder.fd())) +
                           ": wrong job token";
  EXPECT_TRUE(s.wait_for_log(line)) << s.log;

  rank.send(request(QueryType::kSet, {"/after"}, "2"));
  EXPECT_EQ(authenticated_get(rank, "/before"), "1");
  EXPECT_EQ(authenticated_get(rank, "/after"), "2");
}

TEST(StoreServer, AnyOtherFirstRequestIsRefusedUnanswered) {
  LoggedServer s;
  StoreTestClient skips_the_token("127.0.0.1", s.server->port());
  ASSERT_TRUE(skips_the_token.handshake());
  skips_the_token.send(request(QueryType::kSet, {"/k"}, "v"));
  EXPECT_TRUE(skips_the_token.closed_by_server());
  StoreTestClient http("127.0.0.1", s.server->port());
  http.send_raw("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(http.closed_by_server());
  EXPECT_TRUE(s.wait_for_log("its first request was not the job-token check")) << s.log;
  EXPECT_TRUE(s.wait_for_log("it is not a c10d TCPStore client")) << s.log;
  // Nothing was stored by the refused SET.
  StoreTestClient rank("127.0.0.1", s.server->port());
  ASSERT_TRUE(rank.join("right-token"));
  rank.send(request(QueryType::kGetNumKeys, {}));
  std::string count;
  ASSERT_TRUE(rank.read_exact(8, &count));
  EXPECT_EQ(count, store::encode_int_reply(0));
}

TEST(StoreServer, AWaitIsAnsweredByAnotherConnectionsWrite) {
  LoggedServer s;
  StoreTestClient waiter("127.0.0.1", s.server->port());
  StoreTestClient writer("127.0.0.1", s.server->port());
  for (StoreTestClient* c : {&waiter, &writer}) ASSERT_TRUE(c->join("right-token"));
  waiter.send(request(QueryType::kWait, {"/late"}));
  // A PING behind the WAIT comes back first: the WAIT was taken and is not
  // answered while the key is missing (its answer would come before the echo).
  waiter.send_raw(std::string(1, '\x0d') + "ping");
  std::string echo;
  ASSERT_TRUE(waiter.read_exact(4, &echo));
  EXPECT_EQ(echo, "ping") << "answered before the key exists";
  std::string byte;
  writer.send(request(QueryType::kSet, {"/late"}, "here"));
  ASSERT_TRUE(waiter.read_exact(1, &byte));
  EXPECT_EQ(byte, store::encode_wait_reply(store::WaitReply::kStopWaiting));
}

TEST(StoreServer, AClientOfTheOlderProtocolIsToldApartAndRefused) {
  LoggedServer s;
  // LibTorch 1.13's client opens with its request: here the job-token check,
  // COMPARE_SET, which was query type 1 there (SET in 2.x), no handshake.
  std::string cas_113(1, '\x01');
  for (const std::string field : {"/paisoar/auth", "right-token", "right-token"}) {
    for (int i = 0; i < 8; ++i) cas_113.push_back(static_cast<char>(((field.size()) >> (8 * i)) & 0xff));
    cas_113 += field;
  }
  StoreTestClient old("127.0.0.1", s.server->port());
  old.send_raw(cas_113);
  EXPECT_TRUE(old.closed_by_server()) << "closed, never left waiting for an answer";
  EXPECT_TRUE(s.wait_for_log("refused a connection from 127.0.0.1:" +
                             std::to_string(local_port(old.fd())) +
                             ": it speaks a TCPStore protocol older than LibTorch 2.x (no "
                             "validation handshake); this launcher speaks 2.x's"))
      << s.log;
  // 1.13's SET starts with byte 0, as VALIDATE does, then a length, not the magic.
  StoreTestClient old_set("127.0.0.1", s.server->port());
  old_set.send_raw(std::string(1, '\0') + std::string("\x02\0\0\0\0\0\0\0/k", 10));
  EXPECT_TRUE(old_set.closed_by_server());
  StoreTestClient rank("127.0.0.1", s.server->port());
  EXPECT_TRUE(rank.join("right-token")) << "the store goes on";
}

TEST(StoreServer, RefusesTheWildcardAddressAndABusyPort) {
  StoreServerOptions o;
  o.token = "t";
  o.host = "0.0.0.0";
  try {
    StoreServer wildcard(o);
    FAIL() << "bound the wildcard address";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("wildcard"), std::string::npos) << e.what();
  }
  LoggedServer first;
  o.host = "127.0.0.1";
  o.port = first.server->port();
  try {
    StoreServer second(o);
    FAIL() << "bound a port in use";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("127.0.0.1:" + std::to_string(o.port)), std::string::npos) << what;
    EXPECT_NE(what.find("--master_port"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace paisoar::launch::testing
