// The c10d TCPStore wire format of LibTorch 2.x: every request torch 2.14.1's
// own client sent in data/tcpstore_2_14_transcript.txt (recorded from the
// real Python client and server by capture_tcpstore_transcript.py) decodes
// and re-encodes to the same bytes; a few of those bytes are spelled out
// below; incomplete requests ask for more bytes; unknown types and
// oversized fields are malformed; the first bytes of a 1.13 client, whose
// first byte is a query and not the 2.x handshake, are told apart from the
// handshake and from clients of no TCPStore at all.
#include "launch/rendezvous/store_protocol.h"

#include <gtest/gtest.h>

#include "store_request.h"
#include "store_transcript.h"

namespace paisoar::launch::store {
namespace {

using testing::request;

std::string u64(std::uint64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return out;
}

std::string byte(int b) { return std::string(1, static_cast<char>(b)); }

Request decode_all(const std::string& bytes) {
  Request r;
  std::size_t consumed = 0;
  EXPECT_EQ(decode_request(bytes, DecodeLimits{}, &r, &consumed), DecodeStatus::kComplete);
  EXPECT_EQ(consumed, bytes.size());
  return r;
}

TEST(StoreProtocol, TorchsRequestsDecodeAndReencodeByteForByte) {
  const std::string sent = paisoar::launch::testing::sent_by(
      paisoar::launch::testing::read_transcript(), 1, /*client=*/true);
  ASSERT_FALSE(sent.empty());
  std::vector<QueryType> types;
  for (std::size_t at = 0; at < sent.size();) {
    Request r;
    std::size_t consumed = 0;
    ASSERT_EQ(decode_request(std::string_view(sent).substr(at), DecodeLimits{}, &r, &consumed),
              DecodeStatus::kComplete)
        << "at byte " << at;
    EXPECT_EQ(encode_request(r), sent.substr(at, consumed)) << "request " << types.size();
    types.push_back(r.type);
    at += consumed;
  }
  using Q = QueryType;
  const std::vector<QueryType> expected = {
      Q::kValidate, Q::kPing, Q::kCompareSet,                        // connect, token
      Q::kSet, Q::kCompareSet, Q::kCompareSet, Q::kCompareSet, Q::kCompareSet,
      Q::kWait, Q::kGet, Q::kAdd, Q::kAdd, Q::kCheck, Q::kCheck,     // get = WAIT + GET
      Q::kWait, Q::kWait, Q::kCancelWait,                           // a wait that timed out
      Q::kGetNumKeys, Q::kDeleteKey, Q::kDeleteKey, Q::kAppend, Q::kAppend, Q::kWait, Q::kGet,
      Q::kMultiSet, Q::kWait, Q::kMultiGet,                         // multi_get = WAIT + MULTI_GET
      Q::kQueuePush, Q::kQueuePush, Q::kQueueLen, Q::kWait, Q::kQueuePop,  // blocking pop
      Q::kQueuePop, Q::kQueuePop, Q::kQueueLen, Q::kQueuePush, Q::kCheck, Q::kListKeys,
      Q::kBarrier, Q::kBarrier, Q::kWait, Q::kGet, Q::kBarrier, Q::kCancelWait,
      Q::kGetNumKeys, Q::kWait, Q::kCancelWait, Q::kSet, Q::kAdd};
  EXPECT_EQ(types, expected);
}

TEST(StoreProtocol, MatchesTheBytesOfTorch2) {
  // From the transcript: the handshake (PING's nonce is the client's pid),
  // the job-token check and a SET, as torch 2.14.1's client sent them.
  const std::string validate = byte(0x00) + "\xce\xf7\x85\x3c";
  EXPECT_EQ(encode_request(request(QueryType::kValidate, {}, "", "", 0, kValidationMagic)), validate);
  EXPECT_EQ(encode_request(request(QueryType::kPing, {}, "", "", 0, 0x1e71)),
            byte(0x0d) + "\x71\x1e" + std::string(2, '\0'));
  const std::string cas = byte(0x02) + u64(13) + "/paisoar/auth" + u64(3) + "tok" + u64(3) + "tok";
  EXPECT_EQ(encode_request(request(QueryType::kCompareSet, {"/paisoar/auth"}, "tok", "tok")), cas);
  EXPECT_EQ(encode_request(request(QueryType::kSet, {"/k"}, "v")),
            byte(0x01) + u64(2) + "/k" + u64(1) + "v");
  const Request r = decode_all(cas);
  EXPECT_EQ(r.type, QueryType::kCompareSet);
  EXPECT_EQ(r.keys, std::vector<std::string>{"/paisoar/auth"});
  EXPECT_EQ(r.value, "tok");
  EXPECT_EQ(r.desired, "tok");
  EXPECT_EQ(classify_handshake(validate), Handshake::kValid);
}

TEST(StoreProtocol, TellsAnOlderClientFromThe2xHandshake) {
  // LibTorch 1.13's client opens with its first request: SET (0x00) or
  // COMPARE_SET (0x01, the job-token check) of "/paisoar/auth", with a
  // uint64 length where 2.x has the magic number.
  const std::string set_113 = byte(0x00) + u64(2) + "/k" + u64(1) + "v";
  const std::string cas_113 = byte(0x01) + u64(13) + "/paisoar/auth" + u64(3) + "tok" + u64(3) + "tok";
  EXPECT_EQ(classify_handshake(set_113), Handshake::kOlderProtocol);
  EXPECT_EQ(classify_handshake(set_113.substr(0, 2)), Handshake::kOlderProtocol)
      << "decided as soon as a byte differs from the magic";
  EXPECT_EQ(classify_handshake(cas_113), Handshake::kOlderProtocol);
  EXPECT_EQ(classify_handshake(byte(0x08)), Handshake::kOlderProtocol);  // 1.13's DELETE_KEY
  EXPECT_EQ(classify_handshake("GET / HTTP/1.1\r\n"), Handshake::kNotTcpStore);
  EXPECT_EQ(classify_handshake(byte(0x0d) + "\x01\x02\x03\x04"), Handshake::kNotTcpStore)
      << "a 2.x PING before VALIDATE";
  const std::string validate = byte(0x00) + "\xce\xf7\x85\x3c";
  for (std::size_t n = 0; n < validate.size(); ++n)
    EXPECT_EQ(classify_handshake(validate.substr(0, n)), Handshake::kIncomplete) << n;
  EXPECT_EQ(classify_handshake(validate + byte(0x0d)), Handshake::kValid);
}

TEST(StoreProtocol, EveryQueryTypeRoundTrips) {
  Request multi_set = request(QueryType::kMultiSet, {"/a", "/b"});
  multi_set.values = {"1", std::string("\0z", 2)};
  const std::vector<Request> requests = {
      request(QueryType::kValidate, {}, "", "", 0, kValidationMagic),
      request(QueryType::kSet, {"/a"}, std::string("\0\1bin", 5)),
      request(QueryType::kCompareSet, {"/a"}, "", "new"),
      request(QueryType::kGet, {"/a"}),
      request(QueryType::kAdd, {"/n"}, "", "", -42),
      request(QueryType::kCheck, {"/a", "/b", ""}),
      request(QueryType::kWait, {"/a"}),
      request(QueryType::kWait, {}),
      request(QueryType::kGetNumKeys, {}),
      request(QueryType::kDeleteKey, {"/a"}),
      request(QueryType::kAppend, {"/a"}, "more"),
      request(QueryType::kMultiGet, {"/a", "/b"}),
      multi_set,
      request(QueryType::kCancelWait, {}),
      request(QueryType::kPing, {}, "", "", 0, 0xdeadbeef),
      request(QueryType::kQueuePush, {"/q"}, "item"),
      request(QueryType::kQueuePop, {"/q"}),
      request(QueryType::kQueueLen, {"/q"}),
      request(QueryType::kListKeys, {}),
      request(QueryType::kBarrier, {"/b"}, "", "", 8),
  };
  for (const Request& in : requests) {
    const Request out = decode_all(encode_request(in));
    EXPECT_EQ(out.type, in.type);
    EXPECT_EQ(out.keys, in.keys);
    EXPECT_EQ(out.value, in.value);
    EXPECT_EQ(out.desired, in.desired);
    EXPECT_EQ(out.values, in.values);
    EXPECT_EQ(out.delta, in.delta);
    EXPECT_EQ(out.word, in.word);
  }
}

TEST(StoreProtocol, EveryPrefixIsIncompleteAndTwoRequestsSplit) {
  Request multi_set = request(QueryType::kMultiSet, {"/x", "/y"});
  multi_set.values = {"1", "22"};
  for (const Request& req : {request(QueryType::kCompareSet, {"/key"}, "old", "new"), multi_set,
                             request(QueryType::kBarrier, {"/b"}, "", "", 2)}) {
    const std::string one = encode_request(req);
    for (std::size_t n = 0; n < one.size(); ++n) {
      Request r;
      std::size_t consumed = 0;
      EXPECT_EQ(decode_request(one.substr(0, n), DecodeLimits{}, &r, &consumed),
                DecodeStatus::kIncomplete)
          << n << " bytes";
    }
    const std::string two = one + encode_request(request(QueryType::kGet, {"/key"}));
    Request r;
    std::size_t consumed = 0;
    ASSERT_EQ(decode_request(two, DecodeLimits{}, &r, &consumed), DecodeStatus::kComplete);
    EXPECT_EQ(consumed, one.size());
    EXPECT_EQ(decode_all(two.substr(consumed)).type, QueryType::kGet);
  }
}

TEST(StoreProtocol, UnknownTypesAndOversizedFieldsAreMalformed) {
  Request r;
  std::size_t consumed = 0;
  EXPECT_EQ(decode_request(byte(19), DecodeLimits{}, &r, &consumed), DecodeStatus::kMalformed);
  EXPECT_EQ(decode_request("GET / HTTP/1.1\r\n", DecodeLimits{}, &r, &consumed),
            DecodeStatus::kMalformed);
  DecodeLimits small;
  small.max_field_bytes = 8;
  small.max_keys = 2;
  // A huge length is refused from the length alone, before any data arrives.
  EXPECT_EQ(decode_request(byte(0x01) + u64(~std::uint64_t{0}), small, &r, &consumed),
            DecodeStatus::kMalformed);
  EXPECT_EQ(decode_request(encode_request(request(QueryType::kSet, {"/k"}, "123456789")), small, &r,
                           &consumed),
            DecodeStatus::kMalformed);
  for (QueryType many : {QueryType::kWait, QueryType::kCheck, QueryType::kMultiGet}) {
    EXPECT_EQ(decode_request(encode_request(request(many, {"/a", "/b", "/c"})), small, &r, &consumed),
              DecodeStatus::kMalformed);
    EXPECT_EQ(decode_request(encode_request(request(many, {"/a", "/b"})), small, &r, &consumed),
              DecodeStatus::kComplete);
  }
  EXPECT_EQ(decode_request(byte(0x0b) + u64(3), small, &r, &consumed), DecodeStatus::kMalformed)
      << "MULTI_SET's count is bounded too";
}

TEST(StoreProtocol, Replies) {
  EXPECT_EQ(encode_bytes_reply("ab"), u64(2) + "ab");
  EXPECT_EQ(encode_int_reply(-1), u64(~std::uint64_t{0}));
  EXPECT_EQ(encode_check_reply(true), byte(0));
  EXPECT_EQ(encode_check_reply(false), byte(1));
  EXPECT_EQ(encode_wait_reply(WaitReply::kStopWaiting), byte(0));
  EXPECT_EQ(encode_wait_reply(WaitReply::kWaitCanceled), byte(1));
  EXPECT_EQ(encode_ping_reply(0x01020304), "\x04\x03\x02\x01");
  EXPECT_EQ(encode_queue_pop_reply(2, "it"), u64(2) + u64(2) + "it");
  EXPECT_EQ(encode_queue_pop_reply(0, ""), u64(0)) << "an empty queue: the length only";
  EXPECT_EQ(encode_keys_reply({"/a", "/bc"}), u64(2) + u64(2) + "/a" + u64(3) + "/bc");
  std::string value;
  std::size_t consumed = 0;
  EXPECT_FALSE(decode_bytes_reply(u64(3) + "ab", &value, &consumed));
  ASSERT_TRUE(decode_bytes_reply(u64(3) + "abcX", &value, &consumed));
  EXPECT_EQ(value, "abc");
  EXPECT_EQ(consumed, 11u);
}

}  // namespace
}  // namespace paisoar::launch::store
