// StoreState: c10d TCPStore's semantics (compareSet's cases, add's decimal
// counters, wait answered once every key exists, delete, key count) and the
// cases where c10d's server drops the connection.
#include "launch/store_state.h"

#include <gtest/gtest.h>

#include "store_request.h"

namespace paisoar::launch::store {
namespace {

using testing::request;


// The one reply to `from`, which must be the only reply.
std::string only_reply(const ApplyResult& result, ConnId from) {
  EXPECT_FALSE(result.close_sender);
  EXPECT_EQ(result.replies.size(), 1u);
  if (result.replies.size() != 1) return "";
  EXPECT_EQ(result.replies[0].to, from);
  return result.replies[0].bytes;
}

TEST(StoreState, SetGetAndCount) {
  StoreState s;
  EXPECT_TRUE(s.apply(1, request(QueryType::kSet, {"/a"}, "x")).replies.empty());  // SET has no reply
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kGet, {"/a"})), 1), encode_bytes_reply("x"));
  s.apply(1, request(QueryType::kSet, {"/a"}, "y"));
  EXPECT_EQ(only_reply(s.apply(2, request(QueryType::kGet, {"/a"})), 2), encode_bytes_reply("y"));
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kGetNumKeys, {})), 1), encode_int_reply(1));
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kDeleteKey, {"/a"})), 1), encode_int_reply(1));
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kDeleteKey, {"/a"})), 1), encode_int_reply(0));
  EXPECT_EQ(s.num_keys(), 0u);
}

TEST(StoreState, CompareSetFollowsC10d) {
  StoreState s;
  // Missing key, expected "": created.
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kCompareSet, {"/k"}, "", "v1")), 1),
            encode_bytes_reply("v1"));
  // Present, expected matches: swapped, the new value comes back.
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kCompareSet, {"/k"}, "v1", "v2")), 1),
            encode_bytes_reply("v2"));
  // Present, expected does not match: unchanged, the current value comes back.
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kCompareSet, {"/k"}, "zz", "v3")), 1),
            encode_bytes_reply("v2"));
  // Missing key, expected not "": not created, the expected value comes back.
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kCompareSet, {"/m"}, "e", "d")), 1),
            encode_bytes_reply("e"));
  EXPECT_EQ(s.num_keys(), 1u);
}

TEST(StoreState, AddKeepsDecimalCounters) {
  StoreState s;
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kAdd, {"/n"}, "", "", 5)), 1), encode_int_reply(5));
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kAdd, {"/n"}, "", "", -7)), 1),
            encode_int_reply(-2));
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kGet, {"/n"})), 1), encode_bytes_reply("-2"));
  s.apply(1, request(QueryType::kSet, {"/t"}, "not a number"));
  EXPECT_TRUE(s.apply(1, request(QueryType::kAdd, {"/t"}, "", "", 1)).close_sender);
}

TEST(StoreState, WaitIsAnsweredWhenEveryKeyExists) {
  StoreState s;
  s.apply(1, request(QueryType::kSet, {"/a"}, "1"));
  EXPECT_EQ(only_reply(s.apply(2, request(QueryType::kWait, {"/a"})), 2), encode_stop_waiting_reply());
  EXPECT_TRUE(s.apply(2, request(QueryType::kWait, {"/a", "/b", "/c"})).replies.empty());
  EXPECT_EQ(only_reply(s.apply(3, request(QueryType::kCheck, {"/a", "/b"})), 3),
            encode_check_reply(false));
  EXPECT_TRUE(s.apply(1, request(QueryType::kSet, {"/b"}, "2")).replies.empty());  // /c still missing
  // The write that completes the wait answers the waiter (and only it: SET has no reply).
  ApplyResult woke = s.apply(1, request(QueryType::kAdd, {"/c"}, "", "", 1));
  ASSERT_EQ(woke.replies.size(), 2u);
  EXPECT_EQ(woke.replies[0].to, 1u);
  EXPECT_EQ(woke.replies[1].to, 2u);
  EXPECT_EQ(woke.replies[1].bytes, encode_stop_waiting_reply());
  EXPECT_EQ(only_reply(s.apply(3, request(QueryType::kCheck, {"/a", "/b", "/c"})), 3),
            encode_check_reply(true));
}

TEST(StoreState, CompareSetThatCreatesAKeyWakesWaiters) {
  StoreState s;
  s.apply(2, request(QueryType::kWait, {"/k"}));
  ApplyResult r = s.apply(1, request(QueryType::kCompareSet, {"/k"}, "", "v"));
  ASSERT_EQ(r.replies.size(), 2u);
  EXPECT_EQ(r.replies[1].to, 2u);
}

TEST(StoreState, ADroppedConnectionIsNotAnswered) {
  StoreState s;
  s.apply(2, request(QueryType::kWait, {"/k"}));
  s.drop(2);
  EXPECT_TRUE(s.apply(1, request(QueryType::kSet, {"/k"}, "v")).replies.empty());
}

TEST(StoreState, ConnectionKeysGoWithTheirConnection) {
  StoreState s;
  const std::string alive = std::string(kConnectionKeyPrefix) + "node_1";
  s.apply(1, request(QueryType::kSet, {alive}, "host pid 1"));
  s.apply(1, request(QueryType::kSet, {"/other"}, "kept"));
  s.apply(2, request(QueryType::kSet, {std::string(kConnectionKeyPrefix) + "node_2"}, "host pid 2"));
  EXPECT_EQ(s.num_keys(), 3u);
  s.drop(1);
  EXPECT_EQ(only_reply(s.apply(3, request(QueryType::kCheck, {alive})), 3), encode_check_reply(false));
  EXPECT_EQ(only_reply(s.apply(3, request(QueryType::kCheck, {"/other"})), 3), encode_check_reply(true));
  EXPECT_EQ(s.num_keys(), 2u) << "only the closed connection's own key goes";
}

TEST(StoreState, UnanswerableRequestsCloseTheSender) {
  StoreState s;
  EXPECT_TRUE(s.apply(1, request(QueryType::kGet, {"/missing"})).close_sender);  // c10d: at() throws
  EXPECT_TRUE(s.apply(1, request(QueryType::kWatchKey, {"/k"})).close_sender);
}

}  // namespace
}  // namespace paisoar::launch::store
