// StoreClient (the launchers' client of the rendezvous store) against a real
// StoreServer on 127.0.0.1: the 2.x handshake, requests and their answers, a
// WAIT answered by another client's write, the connection count the server
// keeps, a wrong token, a server that is no 2.x TCPStore, a store that is not
// there and one that goes away (all StoreConnectionLost naming the store,
// never a hang).
#include "launch/rendezvous/store_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <thread>

#include "launch/free_port.h"
#include "launch/rendezvous/store_server.h"

namespace paisoar::launch {
namespace {

using Clock = StoreClient::Clock;
using namespace std::chrono_literals;

std::unique_ptr<StoreServer> serve(const std::string& token = "the-token") {
  StoreServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.token = token;
  o.log_fd = -1;
  return std::make_unique<StoreServer>(o);
}

StoreClient connect(const StoreServer& server, const std::string& token = "the-token") {
  return StoreClient("127.0.0.1", server.port(), token, Clock::now() + 5s);
}

TEST(StoreClient, RequestsAreAnswered) {
  auto server = serve();
  StoreClient c = connect(*server);
  c.set("/a", "1");
  EXPECT_EQ(c.get("/a"), "1");
  EXPECT_EQ(c.compare_set("/b", "", "first"), "first");
  EXPECT_EQ(c.compare_set("/b", "", "second"), "first") << "compare-and-set: the first writer wins";
  EXPECT_EQ(c.add("/n", 2), 2);
  EXPECT_EQ(c.add("/n", 3), 5);
  EXPECT_TRUE(c.check({"/a", "/b"}));
  EXPECT_FALSE(c.check({"/a", "/missing"}));
  EXPECT_EQ(c.get("/missing"), "") << "no wait before GET";
}

TEST(StoreClient, AServerThatIsNoTcpStore2IsAnError) {
  // Accepts, answers the handshake's PING with the wrong bytes.
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(listener.get(), 1), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  std::thread impostor([&] {
    UniqueFd c(::accept(listener.get(), nullptr, nullptr));
    char request[10];
    std::size_t got = 0;  // VALIDATE (5 bytes) and PING (5 bytes)
    while (got < sizeof(request)) {
      const ssize_t n = ::recv(c.get(), request + got, sizeof(request) - got, 0);
      if (n <= 0) return;
      got += static_cast<std::size_t>(n);
    }
    ::send(c.get(), "nope", 4, MSG_NOSIGNAL);
    char rest;
    ::recv(c.get(), &rest, 1, 0);  // until the client gives up
  });
  try {
    StoreClient("127.0.0.1", ntohs(addr.sin_port), "t", Clock::now() + 5s);
    ADD_FAILURE() << "an impostor passed the handshake";
  } catch (const StoreConnectionLost& e) {
    EXPECT_NE(std::string(e.what()).find("not a LibTorch 2.x TCPStore"), std::string::npos) << e.what();
  }
  impostor.join();
}

TEST(StoreClient, AWaitIsAnsweredWhenAnotherClientWritesTheKey) {
  auto server = serve();
  StoreClient watcher = connect(*server);
  StoreClient writer = connect(*server);
  watcher.wait_async({"/verdict"});
  EXPECT_FALSE(watcher.wait_ready(50ms));
  writer.compare_set("/verdict", "", "done");
  EXPECT_TRUE(watcher.wait_ready(5000ms));
  EXPECT_EQ(watcher.get("/verdict"), "done") << "the connection serves requests again after the answer";
}

TEST(StoreClient, TheServerCountsOpenConnections) {
  auto server = serve();
  {
    StoreClient a = connect(*server);
    StoreClient b = connect(*server);
    a.check({"/x"});  // both served: the server has accepted them
    b.check({"/x"});
    EXPECT_EQ(server->open_connections(), 2u);
  }
  for (int i = 0; i < 500 && server->open_connections() > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(server->open_connections(), 0u);
}

TEST(StoreClient, AWrongTokenIsAnError) {
  auto server = serve();
  try {
    connect(*server, "a-guessed-token");
    FAIL() << "a wrong token was accepted";
  } catch (const StoreConnectionLost& e) {
    EXPECT_NE(std::string(e.what()).find("refused this launcher's job token"), std::string::npos) << e.what();
  }
}

TEST(StoreClient, NoStoreIsAnErrorAtTheDeadline) {
  const int port = pick_free_port("127.0.0.1");
  try {
    StoreClient("127.0.0.1", port, "t", Clock::now() + 300ms);
    FAIL() << "connected to nothing";
  } catch (const StoreConnectionLost& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port) + ": cannot connect"),
              std::string::npos)
        << e.what();
  }
}

TEST(StoreClient, AStoreThatGoesAwayIsAnError) {
  auto server = serve();
  StoreClient c = connect(*server);
  c.wait_async({"/never"});
  server.reset();
  EXPECT_THROW(c.wait_ready(5000ms), StoreConnectionLost);
  EXPECT_THROW(c.get("/a"), StoreConnectionLost);
}

}  // namespace
}  // namespace paisoar::launch
