// StoreServer over real sockets, with raw clients: bound to the address given
// and no other; a connection is served only after the job token; a wrong
// token or any other first request is refused, logged with the peer's
// address, and the other clients go on; a WAIT is answered by another
// connection's write; the wildcard address and a busy port are clear errors.
#include "launch/store_server.h"

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

TEST(StoreServer, ServesAConnectionAfterTheToken) {
  LoggedServer s;
  StoreTestClient c("127.0.0.1", s.server->port());
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
  rank.send_token("right-token");
  std::string answer;
  ASSERT_TRUE(rank.read_bytes_reply(&answer));
  rank.send(request(QueryType::kSet, {"/before"}, "1"));

  StoreTestClient intruder("127.0.0.1", s.server->port());
  intruder.send_token("wrong-token");
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
  skips_the_token.send(request(QueryType::kSet, {"/k"}, "v"));
  EXPECT_TRUE(skips_the_token.closed_by_server());
  StoreTestClient http("127.0.0.1", s.server->port());
  http.send_raw("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(http.closed_by_server());
  EXPECT_TRUE(s.wait_for_log("its first request was not the job-token check")) << s.log;
  // Nothing was stored by the refused SET.
  StoreTestClient rank("127.0.0.1", s.server->port());
  rank.send_token("right-token");
  std::string answer;
  ASSERT_TRUE(rank.read_bytes_reply(&answer));
  rank.send(request(QueryType::kGetNumKeys, {}));
  std::string count;
  ASSERT_TRUE(rank.read_exact(8, &count));
  EXPECT_EQ(count, store::encode_int_reply(0));
}

TEST(StoreServer, AWaitIsAnsweredByAnotherConnectionsWrite) {
  LoggedServer s;
  StoreTestClient waiter("127.0.0.1", s.server->port());
  StoreTestClient writer("127.0.0.1", s.server->port());
  std::string answer;
  for (StoreTestClient* c : {&waiter, &writer}) {
    c->send_token("right-token");
    ASSERT_TRUE(c->read_bytes_reply(&answer));
  }
  waiter.send(request(QueryType::kWait, {"/late"}));
  std::string byte;
  EXPECT_FALSE(waiter.read_exact(1, &byte, 0.2)) << "answered before the key exists";
  writer.send(request(QueryType::kSet, {"/late"}, "here"));
  ASSERT_TRUE(waiter.read_exact(1, &byte));
  EXPECT_EQ(byte, store::encode_stop_waiting_reply());
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
