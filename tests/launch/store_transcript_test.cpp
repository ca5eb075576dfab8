// The launcher's StoreServer against the reference: the conversation torch
// 2.14.1's own TCPStore client had with torch's own server
// (data/tcpstore_2_14_transcript.txt, recorded by
// capture_tcpstore_transcript.py) is replayed, the client's bytes sent as
// recorded, and the launcher's store must answer with the bytes torch's
// server sent, in the same order, closing the connection where it closed it.
// The one liberty: LIST_KEYS lists the same keys in another order (c10d's
// server keeps them in a hash map; its client does not sort either).
// The transcript's second client, made with a world size, ADDs to "init/"
// before anything else: the launcher's store refuses it (no token).
#include "launch/rendezvous/store_server.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>

#include "launch/rendezvous/store_protocol.h"
#include "store_test_client.h"
#include "store_transcript.h"

namespace paisoar::launch::testing {
namespace {

// The keys of a LIST_KEYS reply, sorted.
std::vector<std::string> listed_keys(const std::string& reply) {
  std::vector<std::string> keys;
  std::size_t at = 8;
  for (std::uint64_t n = store::read_u64(reply); n > 0; --n) {
    std::string key;
    std::size_t used = 0;
    if (!store::decode_bytes_reply(std::string_view(reply).substr(at), &key, &used)) break;
    keys.push_back(key);
    at += used;
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::unique_ptr<StoreServer> serve(const std::string& token, int log_fd) {
  StoreServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.token = token;
  o.log_fd = log_fd;
  return std::make_unique<StoreServer>(o);
}

TEST(StoreTranscript, TheStoreAnswersTorchsClientAsTorchsServerDid) {
  const std::vector<TranscriptChunk> chunks = read_transcript();
  // The transcript's first request past the handshake is compare_set of
  // paisoar/auth with "tok": the job-token check for the token "tok".
  auto server = serve("tok", -1);
  StoreTestClient c("127.0.0.1", server->port());
  ASSERT_TRUE(c.connected());
  std::size_t replies = 0;
  for (const TranscriptChunk& chunk : chunks) {
    if (chunk.connection != 1) continue;
    SCOPED_TRACE("step " + chunk.label);
    if (chunk.from_client) {
      c.send_raw(chunk.bytes);
    } else if (chunk.eof) {
      EXPECT_TRUE(c.closed_by_server()) << "torch's server closed the connection here";
    } else {
      std::string got;
      ASSERT_TRUE(c.read_exact(chunk.bytes.size(), &got)) << "no answer where torch's server gave one";
      if (chunk.label == "list_keys") {
        EXPECT_EQ(listed_keys(got), listed_keys(chunk.bytes));
      } else {
        EXPECT_EQ(got, chunk.bytes);
      }
      ++replies;
    }
  }
  EXPECT_GE(replies, 30u) << "the transcript was read";
}

TEST(StoreTranscript, AClientGivenAWorldSizeIsRefusedForWantOfTheToken) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
  UniqueFd log_read(fds[0]), log_write(fds[1]);
  auto server = serve("tok", log_write.get());
  const std::vector<TranscriptChunk> chunks = read_transcript();
  const std::string sent = sent_by(chunks, 2, /*client=*/true);
  ASSERT_FALSE(sent.empty());
  StoreTestClient c("127.0.0.1", server->port());
  c.send_raw(sent);  // VALIDATE, PING, then ADD "init/" 1
  std::string echo;
  ASSERT_TRUE(c.read_exact(4, &echo));
  EXPECT_EQ(echo, sent.substr(6, 4)) << "the PING is echoed, as torch's server did";
  EXPECT_TRUE(c.closed_by_server()) << "then the ADD is refused";
  server.reset();  // joins the store's thread: its log line is written
  char buf[4096];
  const ssize_t n = ::read(log_read.get(), buf, sizeof(buf));
  const std::string log = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
  EXPECT_NE(log.find("its first request was not the job-token check"), std::string::npos) << log;
}

}  // namespace
}  // namespace paisoar::launch::testing
