// The c10d TCPStore 1.13 wire format: requests decode to what was encoded,
// byte for byte as LibTorch 1.13 writes them (the golden bytes below were
// captured from Python torch 1.13's TCPStore client); incomplete requests
// ask for more bytes; unknown types and oversized fields are malformed.
#include "launch/store_protocol.h"

#include <gtest/gtest.h>

#include "store_request.h"

namespace paisoar::launch::store {
namespace {

using testing::request;

std::string u64(std::uint64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return out;
}


Request decode_all(const std::string& bytes) {
  Request r;
  std::size_t consumed = 0;
  EXPECT_EQ(decode_request(bytes, DecodeLimits{}, &r, &consumed), DecodeStatus::kComplete);
  EXPECT_EQ(consumed, bytes.size());
  return r;
}

TEST(StoreProtocol, MatchesTheBytesOfTorch113) {
  // s.set("k", "v") then s.compare_set("paisoar/auth", "tok", "tok"), as sent.
  const std::string set = std::string(1, '\0') + u64(2) + "/k" + u64(1) + "v";
  const std::string cas = std::string(1, '\1') + u64(13) + "/paisoar/auth" + u64(3) + "tok" +
                          u64(3) + "tok";
  EXPECT_EQ(encode_request(request(QueryType::kSet, {"/k"}, "v")), set);
  EXPECT_EQ(encode_request(request(QueryType::kCompareSet, {"/paisoar/auth"}, "tok", "tok")), cas);
  const Request r = decode_all(cas);
  EXPECT_EQ(r.type, QueryType::kCompareSet);
  EXPECT_EQ(r.keys, std::vector<std::string>{"/paisoar/auth"});
  EXPECT_EQ(r.value, "tok");
  EXPECT_EQ(r.desired, "tok");
}

TEST(StoreProtocol, EveryQueryTypeRoundTrips) {
  const std::vector<Request> requests = {
      request(QueryType::kSet, {"/a"}, std::string("\0\1bin", 5)),
      request(QueryType::kCompareSet, {"/a"}, "", "new"),
      request(QueryType::kGet, {"/a"}),
      request(QueryType::kAdd, {"/n"}, "", "", -42),
      request(QueryType::kCheck, {"/a", "/b", ""}),
      request(QueryType::kWait, {"/a"}),
      request(QueryType::kWait, {}),
      request(QueryType::kGetNumKeys, {}),
      request(QueryType::kDeleteKey, {"/a"}),
      request(QueryType::kWatchKey, {"/a"}),
  };
  for (const Request& in : requests) {
    const Request out = decode_all(encode_request(in));
    EXPECT_EQ(out.type, in.type);
    EXPECT_EQ(out.keys, in.keys);
    EXPECT_EQ(out.value, in.value);
    EXPECT_EQ(out.desired, in.desired);
    EXPECT_EQ(out.delta, in.delta);
  }
}

TEST(StoreProtocol, EveryPrefixIsIncompleteAndTwoRequestsSplit) {
  const std::string one = encode_request(request(QueryType::kCompareSet, {"/key"}, "old", "new"));
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

TEST(StoreProtocol, UnknownTypesAndOversizedFieldsAreMalformed) {
  Request r;
  std::size_t consumed = 0;
  EXPECT_EQ(decode_request(std::string(1, '\x09'), DecodeLimits{}, &r, &consumed),
            DecodeStatus::kMalformed);
  EXPECT_EQ(decode_request("GET / HTTP/1.1\r\n", DecodeLimits{}, &r, &consumed),
            DecodeStatus::kMalformed);
  DecodeLimits small;
  small.max_field_bytes = 8;
  small.max_keys = 2;
  // A huge length is refused from the length alone, before any data arrives.
  EXPECT_EQ(decode_request(std::string(1, '\0') + u64(~std::uint64_t{0}), small, &r, &consumed),
            DecodeStatus::kMalformed);
  EXPECT_EQ(decode_request(encode_request(request(QueryType::kSet, {"/k"}, "123456789")), small, &r,
                           &consumed),
            DecodeStatus::kMalformed);
  EXPECT_EQ(decode_request(encode_request(request(QueryType::kWait, {"/a", "/b", "/c"})), small, &r,
                           &consumed),
            DecodeStatus::kMalformed);
  EXPECT_EQ(decode_request(encode_request(request(QueryType::kWait, {"/a", "/b"})), small, &r,
                           &consumed),
            DecodeStatus::kComplete);
}

TEST(StoreProtocol, Replies) {
  EXPECT_EQ(encode_bytes_reply("ab"), u64(2) + "ab");
  EXPECT_EQ(encode_int_reply(-1), u64(~std::uint64_t{0}));
  EXPECT_EQ(encode_check_reply(true), std::string(1, '\0'));
  EXPECT_EQ(encode_check_reply(false), std::string(1, '\1'));
  EXPECT_EQ(encode_stop_waiting_reply(), std::string(1, '\0'));
  std::string value;
  std::size_t consumed = 0;
  EXPECT_FALSE(decode_bytes_reply(u64(3) + "ab", &value, &consumed));
  ASSERT_TRUE(decode_bytes_reply(u64(3) + "abcX", &value, &consumed));
  EXPECT_EQ(value, "abc");
  EXPECT_EQ(consumed, 11u);
}

}  // namespace
}  // namespace paisoar::launch::store
