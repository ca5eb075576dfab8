// Wire compatibility: the launcher's StoreServer driven by LibTorch 2.x's own
// c10d::TCPStore client, made with TCPStoreOptions (set, get, add,
// compareSet, check, wait across two clients and with a timeout, deleteKey,
// getNumKeys, append, multiGet, multiSet, the queues, listKeys, barrier),
// and paisoar::comm::Store::launcher, the client the ranks use: a right
// token joins, a wrong one fails at once with the message users see, and the
// server goes on serving. (Python's client is checked against torch's own
// server in launch_python_test.cpp, and the bytes in store_transcript_test.)
// Not yet built by the project's CMake (that waits for the LibTorch 2.x port
// of src/); compiled by hand against torch 2.14.1's wheel (with
// -DUSE_C10D_GLOO and src/comm/store.cpp), it passed.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <chrono>
#include <thread>

#include "launch/rendezvous/store_server.h"
#include "paisoar/comm/store.h"

namespace paisoar::launch {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

struct Served {
  UniqueFd log_read;
  UniqueFd log_write;
  std::unique_ptr<StoreServer> server;

  Served() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
    log_read.reset(fds[0]);
    log_write.reset(fds[1]);
    StoreServerOptions o;
    o.token = "c10d-token";
    o.log_fd = log_write.get();
    server = std::make_unique<StoreServer>(o);
  }

  // A c10d client that has shown the token.
  c10::intrusive_ptr<::c10d::TCPStore> client() const {
    ::c10d::TCPStoreOptions o;
    o.port = static_cast<std::uint16_t>(server->port());
    o.isServer = false;
    o.waitWorkers = false;
    o.timeout = std::chrono::seconds(20);
    auto c = c10::make_intrusive<::c10d::TCPStore>("127.0.0.1", o);
    EXPECT_EQ(c->compareSet("paisoar/auth", bytes("c10d-token"), bytes("c10d-token")),
              bytes("c10d-token"));
    return c;
  }

  std::string log() const {
    char buf[4096];
    const ssize_t n = ::read(log_read.get(), buf, sizeof(buf));
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
  }
};

TEST(StoreC10d, LibTorchsClientIsServed) {
  Served s;
  auto a = s.client();
  auto b = s.client();
  a->set("key", bytes("value"));
  EXPECT_EQ(b->get("key"), bytes("value"));
  EXPECT_EQ(a->add("counter", 3), 3);
  EXPECT_EQ(b->add("counter", 4), 7);
  EXPECT_EQ(a->get("counter"), bytes("7"));
  EXPECT_EQ(a->compareSet("cas", bytes(""), bytes("first")), bytes("first"));
  EXPECT_EQ(b->compareSet("cas", bytes("first"), bytes("second")), bytes("second"));
  EXPECT_EQ(a->compareSet("cas", bytes("stale"), bytes("third")), bytes("second"));
  EXPECT_TRUE(a->check({"key", "counter"}));
  EXPECT_FALSE(a->check({"key", "missing"}));
  EXPECT_EQ(a->getNumKeys(), 3);
  EXPECT_TRUE(a->deleteKey("key"));
  EXPECT_FALSE(a->deleteKey("key"));
  EXPECT_EQ(a->getNumKeys(), 2);

  // get() waits for a key another client sets later.
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    b->set("late", bytes("here"));
  });
  EXPECT_EQ(a->get("late"), bytes("here"));
  writer.join();
  a->wait({"late", "counter"}, std::chrono::seconds(5));
  // A wait that times out: the client's CANCEL_WAIT is answered, and the
  // connection serves requests again.
  EXPECT_THROW(a->wait({"never"}, std::chrono::milliseconds(200)), c10::DistStoreError);
  EXPECT_EQ(a->get("late"), bytes("here"));
  EXPECT_EQ(s.log(), "") << "nothing was refused";
}

TEST(StoreC10d, TheExtendedQueriesAreServed) {
  Served s;
  auto a = s.client();
  auto b = s.client();
  ASSERT_TRUE(a->hasExtendedApi());
  a->append("ap", bytes("ab"));
  b->append("ap", bytes("cd"));
  EXPECT_EQ(a->get("ap"), bytes("abcd"));
  a->multiSet({"m1", "m2"}, {bytes("x"), bytes("yz")});
  EXPECT_EQ(b->multiGet({"m2", "m1"}), (std::vector<Bytes>{bytes("yz"), bytes("x")}));
  a->queuePush("q", bytes("one"));
  a->queuePush("q", bytes("two"));
  EXPECT_EQ(b->queueLen("q"), 2);
  EXPECT_EQ(b->queuePop("q", /*block=*/true), bytes("one"));
  EXPECT_EQ(b->queuePop("q", /*block=*/false), bytes("two"));
  EXPECT_THROW(b->queuePop("q", /*block=*/false), c10::DistQueueEmptyError);
  std::vector<std::string> keys = a->listKeys();
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"ap", "m1", "m2"}));
  std::thread other([&] { b->barrier("both", 2, std::chrono::seconds(10)); });
  a->barrier("both", 2, std::chrono::seconds(10));
  other.join();
  EXPECT_EQ(a->get("both"), bytes("2"));
  EXPECT_EQ(s.log(), "") << "nothing was refused";
}

TEST(StoreC10d, TheRanksClientJoinsWithTheRightTokenOnly) {
  Served s;
  const int port = s.server->port();
  comm::Store member = comm::Store::launcher("127.0.0.1", port, "c10d-token", std::chrono::seconds(20));
  member.set("before", "1");
  try {
    comm::Store::launcher("127.0.0.1", port, "guessed", std::chrono::seconds(20));
    FAIL() << "a wrong token joined";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("the rendezvous store refused this process: "
                                         "PAISOAR_JOB_TOKEN does not match the job's"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NE(s.log().find("wrong job token"), std::string::npos);
  member.set("after", "2");
  EXPECT_EQ(member.get("before"), "1");
  EXPECT_EQ(member.with_prefix("p").port(), port);
  EXPECT_EQ(member.get("after"), "2");
}

}  // namespace
}  // namespace paisoar::launch
