// StoreState: c10d 2.x TCPStore's semantics as torch 2.14.1's server answers
// them (compareSet's cases, add's decimal counters, wait answered once every
// key exists, CANCEL_WAIT, append, multi get/set, queues, list_keys,
// barrier counters, delete, key count) and the cases where c10d's server
// drops the connection. The byte-for-byte comparison with torch's server is
// in store_transcript_test.cpp; these pin the rules one at a time.
#include "launch/rendezvous/store_state.h"

#include <gtest/gtest.h>

#include "store_request.h"

namespace paisoar::launch::store {
namespace {

using testing::request;

const std::string kStop = encode_wait_reply(WaitReply::kStopWaiting);
const std::string kCanceled = encode_wait_reply(WaitReply::kWaitCanceled);

// The one reply to `from`, which must be the only reply.
std::string only_reply(const ApplyResult& result, ConnId from) {
  EXPECT_FALSE(result.close_sender);
  EXPECT_EQ(result.replies.size(), 1u);
  if (result.replies.size() != 1) return "";
  EXPECT_EQ(result.replies[0].to, from);
  return result.replies[0].bytes;
}

Request multi_set(std::vector<std::string> keys, std::vector<std::string> values) {
  Request r = request(QueryType::kMultiSet, std::move(keys));
  r.values = std::move(values);
  return r;
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
  // c10d's client WAITs before GET; a key gone in between reads as "", as torch's server answers.
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kGet, {"/a"})), 1), encode_bytes_reply(""));
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
  EXPECT_EQ(only_reply(s.apply(2, request(QueryType::kWait, {"/a"})), 2), kStop);
  EXPECT_TRUE(s.apply(2, request(QueryType::kWait, {"/a", "/b", "/c"})).replies.empty());
  EXPECT_EQ(only_reply(s.apply(3, request(QueryType::kCheck, {"/a", "/b"})), 3),
            encode_check_reply(false));
  EXPECT_TRUE(s.apply(1, request(QueryType::kSet, {"/b"}, "2")).replies.empty());  // /c still missing
  // The write that completes the wait answers the waiter (and the writer: ADD has a reply).
  ApplyResult woke = s.apply(1, request(QueryType::kAdd, {"/c"}, "", "", 1));
  ASSERT_EQ(woke.replies.size(), 2u);
  EXPECT_EQ(woke.replies[0].to, 1u);
  EXPECT_EQ(woke.replies[1].to, 2u);
  EXPECT_EQ(woke.replies[1].bytes, kStop);
  EXPECT_EQ(only_reply(s.apply(3, request(QueryType::kCheck, {"/a", "/b", "/c"})), 3),
            encode_check_reply(true));
}

TEST(StoreState, EveryKindOfWriteWakesWaiters) {
  StoreState s;
  s.apply(2, request(QueryType::kWait, {"/cas"}));
  ApplyResult r = s.apply(1, request(QueryType::kCompareSet, {"/cas"}, "", "v"));
  ASSERT_EQ(r.replies.size(), 2u);
  EXPECT_EQ(r.replies[1].to, 2u);
  s.apply(2, request(QueryType::kWait, {"/ap"}));
  r = s.apply(1, request(QueryType::kAppend, {"/ap"}, "x"));
  ASSERT_EQ(r.replies.size(), 1u);
  EXPECT_EQ(r.replies[0].to, 2u);
  s.apply(2, request(QueryType::kWait, {"/m1", "/m2"}));
  r = s.apply(1, multi_set({"/m1", "/m2"}, {"1", "2"}));
  ASSERT_EQ(r.replies.size(), 1u);
  EXPECT_EQ(r.replies[0].bytes, kStop);
  // A COMPARE_SET that creates nothing wakes nobody.
  s.apply(2, request(QueryType::kWait, {"/none"}));
  EXPECT_EQ(s.apply(1, request(QueryType::kCompareSet, {"/none"}, "e", "d")).replies.size(), 1u);
}

TEST(StoreState, CancelWaitAnswersWaitCanceledAfterAnyStopWaiting) {
  StoreState s;
  s.apply(2, request(QueryType::kWait, {"/k"}));
  EXPECT_EQ(only_reply(s.apply(2, request(QueryType::kCancelWait, {})), 2), kCanceled);
  EXPECT_TRUE(s.apply(1, request(QueryType::kSet, {"/k"}, "v")).replies.empty())
      << "a canceled wait is not answered later";
  // The client timed out just as the key came: STOP_WAITING went first, then
  // CANCEL_WAIT's WAIT_CANCELED, which torch's client reads in that order.
  s.apply(2, request(QueryType::kWait, {"/late"}));
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kSet, {"/late"}, "v")), 2), kStop);
  EXPECT_EQ(only_reply(s.apply(2, request(QueryType::kCancelWait, {})), 2), kCanceled);
}

TEST(StoreState, AppendAndMultiGetAndSet) {
  StoreState s;
  s.apply(1, request(QueryType::kAppend, {"/ap"}, "ab"));
  s.apply(1, request(QueryType::kAppend, {"/ap"}, "cd"));
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kGet, {"/ap"})), 1), encode_bytes_reply("abcd"));
  EXPECT_TRUE(s.apply(1, multi_set({"/x", "/y"}, {"1", "22"})).replies.empty());
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kMultiGet, {"/y", "/missing", "/x"})), 1),
            encode_bytes_reply("22") + encode_bytes_reply("") + encode_bytes_reply("1"))
      << "one byte vector per key, back to back, no count";
}

TEST(StoreState, QueuesPushPopAndLen) {
  StoreState s;
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kQueuePop, {"/q"})), 1), encode_int_reply(0));
  s.apply(1, request(QueryType::kQueuePush, {"/q"}, "one"));
  s.apply(1, request(QueryType::kQueuePush, {"/q"}, "two"));
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kQueueLen, {"/q"})), 1), encode_int_reply(2));
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kCheck, {"/q"})), 1), encode_check_reply(true));
  // The length before the pop, then the front item.
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kQueuePop, {"/q"})), 1),
            encode_queue_pop_reply(2, "one"));
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kQueuePop, {"/q"})), 1),
            encode_queue_pop_reply(1, "two"));
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kCheck, {"/q"})), 1), encode_check_reply(false));
  EXPECT_EQ(s.num_keys(), 0u) << "queues are not keys";
  // A blocking pop WAITs for the queue's key: one push wakes one popper.
  s.apply(2, request(QueryType::kWait, {"/q"}));
  s.apply(3, request(QueryType::kWait, {"/q"}));
  ApplyResult pushed = s.apply(1, request(QueryType::kQueuePush, {"/q"}, "three"));
  ASSERT_EQ(pushed.replies.size(), 1u);
  EXPECT_EQ(pushed.replies[0].to, 2u);
  pushed = s.apply(1, request(QueryType::kQueuePush, {"/q"}, "four"));
  ASSERT_EQ(pushed.replies.size(), 1u);
  EXPECT_EQ(pushed.replies[0].to, 3u);
}

TEST(StoreState, ListKeysListsValuesOnly) {
  StoreState s;
  s.apply(1, request(QueryType::kSet, {"/b"}, "1"));
  s.apply(1, request(QueryType::kSet, {"/a"}, "2"));
  s.apply(1, request(QueryType::kQueuePush, {"/q"}, "3"));
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kListKeys, {})), 1),
            encode_keys_reply({"/a", "/b"}));
}

TEST(StoreState, BarrierCountsArrivalsInItsKey) {
  StoreState s;
  EXPECT_TRUE(s.apply(1, request(QueryType::kBarrier, {"/bar"}, "", "", 3)).replies.empty());
  EXPECT_TRUE(s.apply(2, request(QueryType::kBarrier, {"/bar"}, "", "", 3)).replies.empty());
  EXPECT_EQ(only_reply(s.apply(9, request(QueryType::kGet, {"/bar"})), 9), encode_bytes_reply("2"));
  ApplyResult last = s.apply(3, request(QueryType::kBarrier, {"/bar"}, "", "", 3));
  ASSERT_EQ(last.replies.size(), 3u);
  for (const Reply& r : last.replies) EXPECT_EQ(r.bytes, kStop);
  // Late arrivals pass at once; the counter goes on.
  EXPECT_EQ(only_reply(s.apply(4, request(QueryType::kBarrier, {"/bar"}, "", "", 3)), 4), kStop);
  EXPECT_EQ(only_reply(s.apply(9, request(QueryType::kGet, {"/bar"})), 9), encode_bytes_reply("4"));
  // A timed-out arrival cancels its wait; its count stays.
  s.apply(5, request(QueryType::kBarrier, {"/b2"}, "", "", 2));
  EXPECT_EQ(only_reply(s.apply(5, request(QueryType::kCancelWait, {})), 5), kCanceled);
  ApplyResult second = s.apply(6, request(QueryType::kBarrier, {"/b2"}, "", "", 2));
  EXPECT_EQ(only_reply(second, 6), kStop);
  // A key that is no counter: dropped, as ADD.
  s.apply(1, request(QueryType::kSet, {"/txt"}, "abc"));
  EXPECT_TRUE(s.apply(1, request(QueryType::kBarrier, {"/txt"}, "", "", 1)).close_sender);
}

TEST(StoreState, ADroppedConnectionIsNotAnswered) {
  StoreState s;
  s.apply(2, request(QueryType::kWait, {"/k"}));
  s.apply(3, request(QueryType::kBarrier, {"/b"}, "", "", 2));
  s.drop(2);
  s.drop(3);
  EXPECT_TRUE(s.apply(1, request(QueryType::kSet, {"/k"}, "v")).replies.empty());
  EXPECT_EQ(only_reply(s.apply(1, request(QueryType::kBarrier, {"/b"}, "", "", 2)), 1), kStop);
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

TEST(StoreState, ConnectionQueriesAreNotTheStates) {
  StoreState s;
  EXPECT_TRUE(s.apply(1, request(QueryType::kValidate, {})).close_sender);
  EXPECT_TRUE(s.apply(1, request(QueryType::kPing, {})).close_sender);
}

}  // namespace
}  // namespace paisoar::launch::store
