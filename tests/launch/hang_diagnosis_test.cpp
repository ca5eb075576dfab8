// diagnose_hang over flight records built by hand: who is named, with what,
// and when nothing is (yet): a wait shorter than the limit, a peer in a
// checkpoint, an evaluation or setup within the longer limit, ranks that all
// joined the collective and none stopped.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "launch/hang_diagnosis.h"

namespace paisoar::launch {
namespace {

using util::Activity;
using util::FlightEntry;

constexpr int64_t kSecond = 1000000000;
constexpr int64_t kNow = 1000 * kSecond;

// A rank of a 2-rank world whose entries are given newest last.
RankRecord rank_record(int rank, Activity activity, int64_t step, int64_t since_s_ago,
                       std::vector<FlightEntry> entries, bool stopped = false) {
  RankRecord r;
  r.global_rank = rank;
  r.local_rank = rank;
  r.pid = 100 + rank;
  r.stopped = stopped;
  r.record.rank = rank;
  r.record.pid = r.pid;
  r.record.activity = activity;
  r.record.step = step;
  r.record.activity_since_ns = kNow - since_s_ago * kSecond;
  r.record.groups = {{"world", 2, {0, 1}}, {"world/g0", 2, {0, 1}}};
  r.record.entries = std::move(entries);
  return r;
}

FlightEntry call(int64_t seq, const char* op, int64_t issued_s_ago, bool done, int group = 0, int64_t numel = 1024,
                 int peer = -1) {
  FlightEntry e;
  e.seq = seq;
  e.group = group;
  e.op = op;
  e.dtype = "Float";
  e.numel = numel;
  e.step = 7;
  e.activity = Activity::Backward;
  e.enqueued_ns = kNow - issued_s_ago * kSecond;
  e.waited_ns = e.enqueued_ns;  // waited for at once (a pending one: since it was issued)
  e.ended_ns = done ? e.enqueued_ns + 1000 : 0;
  e.peer = peer;
  return e;
}

HangLimits limits() {
  HangLimits l;
  l.wait_s = 30;
  l.long_activity_s = 300;
  return l;
}

void expect_has(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in:\n" << text;
}

TEST(HangDiagnosis, AStoppedRankThatDidNotReachTheCollectiveIsNamed) {
  const std::vector<RankRecord> ranks = {
      rank_record(0, Activity::Backward, 7, 40, {call(11, "allreduce", 60, true), call(12, "allreduce", 35, false)}),
      rank_record(1, Activity::Forward, 7, 36, {call(11, "allreduce", 60, true)}, /*stopped=*/true)};
  const auto verdict = diagnose_hang(ranks, kNow, limits());
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->culprit, 1);
  expect_has(verdict->message, "hang: rank 1 (local_rank 1, pid 101) did not reach allreduce #12 of group 'world' "
                               "(1024 Float): it is stopped (SIGSTOP; it was in forward at step 7 for 36 s)");
  expect_has(verdict->message, "Waiting: rank 0 has waited 35 s in allreduce #12 of group 'world' (1024 Float) "
                               "(issued in backward at step 7)");
}

TEST(HangDiagnosis, ARankInItsDataLoaderIsNamedWithThePhase) {
  const std::vector<RankRecord> ranks = {
      rank_record(0, Activity::Backward, 7, 40, {call(12, "allreduce", 31, false)}),
      rank_record(1, Activity::Data, 7, 33, {call(11, "allreduce", 60, true)})};
  const auto verdict = diagnose_hang(ranks, kNow, limits());
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->culprit, 1);
  expect_has(verdict->message, "it has been in data loading at step 7 for 33 s (stuck in its data loader");
}

TEST(HangDiagnosis, NothingIsNamedBeforeTheLimit) {
  const std::vector<RankRecord> ranks = {
      rank_record(0, Activity::Backward, 7, 40, {call(12, "allreduce", 29, false)}),
      rank_record(1, Activity::Forward, 7, 33, {call(11, "allreduce", 60, true)}, true)};
  EXPECT_FALSE(diagnose_hang(ranks, kNow, limits()).has_value());
}

TEST(HangDiagnosis, ACheckpointOrEvaluationGetsTheLongerLimit) {
  for (const Activity long_one : {Activity::Checkpoint, Activity::Evaluation, Activity::Setup}) {
    SCOPED_TRACE(util::activity_name(long_one));
    std::vector<RankRecord> ranks = {
        rank_record(0, Activity::Other, 7, 100, {call(12, "allreduce", 100, false)}),
        rank_record(1, long_one, 7, 120, {call(11, "allreduce", 130, true)})};
    EXPECT_FALSE(diagnose_hang(ranks, kNow, limits()).has_value());
    ranks[1].record.activity_since_ns = kNow - 301 * kSecond;  // past the longer limit: hung
    const auto verdict = diagnose_hang(ranks, kNow, limits());
    ASSERT_TRUE(verdict.has_value());
    expect_has(verdict->message, std::string("it has been in ") + util::activity_name(long_one));
    ranks[1].record.activity_since_ns = kNow - 120 * kSecond;
    ranks[1].stopped = true;  // stopped is hung whatever it was doing
    ASSERT_TRUE(diagnose_hang(ranks, kNow, limits()).has_value());
  }
}

// A background save's collective waits for peers still writing while their
// training loop is elsewhere: issued in a checkpoint, it gets the longer limit.
TEST(HangDiagnosis, AWaitIssuedInACheckpointGetsTheLongerLimit) {
  FlightEntry saving = call(3, "allreduce", 100, false, 1, 1);
  saving.activity = Activity::Checkpoint;
  std::vector<RankRecord> ranks = {rank_record(0, Activity::Forward, 9, 1, {saving}),
                                   rank_record(1, Activity::Forward, 9, 1, {call(2, "allreduce", 200, true, 1, 1)})};
  EXPECT_FALSE(diagnose_hang(ranks, kNow, limits()).has_value());
  ranks[0].record.entries[0].waited_ns = kNow - 301 * kSecond;
  EXPECT_FALSE(diagnose_hang(ranks, kNow, limits()).has_value());  // rank 1 trains on: progress
  ranks[1].stopped = true;
  ASSERT_TRUE(diagnose_hang(ranks, kNow, limits()).has_value());
}

TEST(HangDiagnosis, RanksWaitingInDifferentGroupsAreMismatchedControlFlow) {
  const std::vector<RankRecord> ranks = {
      rank_record(0, Activity::Other, 7, 40, {call(4, "allreduce", 70, true), call(5, "allreduce", 40, false)}),
      rank_record(1, Activity::Other, 7, 40, {call(4, "allreduce", 70, true), call(1, "allreduce", 41, false, 1, 16)})};
  const auto verdict = diagnose_hang(ranks, kNow, limits());
  ASSERT_TRUE(verdict.has_value());
  expect_has(verdict->message, "rank 0 (local_rank 0, pid 100) did not reach allreduce #1 of group 'world/g0' (16 "
                               "Float): it has waited 40 s in allreduce #5 of group 'world' (1024 Float) instead, "
                               "which rank 1 has not issued (it issued 4 of group 'world'): each waits for the "
                               "other (mismatched control flow");
}

// A pipeline posts receives long before it waits for them: issued is not waiting.
TEST(HangDiagnosis, AnEarlyReceiveNobodyWaitsForIsNoHang) {
  FlightEntry early = call(-1, "recv", 100, false, 0, 64, 0);
  early.waited_ns = 0;
  const std::vector<RankRecord> ranks = {rank_record(0, Activity::Forward, 7, 1, {}),
                                         rank_record(1, Activity::Forward, 7, 1, {early})};
  EXPECT_FALSE(diagnose_hang(ranks, kNow, limits()).has_value());
}

// A laggard that keeps changing activity is making progress: not named yet.
TEST(HangDiagnosis, ABusyLaggardIsNotNamedUntilItStaysInOneActivityPastTheLimit) {
  std::vector<RankRecord> ranks = {
      rank_record(0, Activity::Other, 7, 40, {call(12, "allreduce", 35, false)}),
      rank_record(1, Activity::Forward, 8, 5, {call(11, "allreduce", 60, true)})};
  EXPECT_FALSE(diagnose_hang(ranks, kNow, limits()).has_value());
  ranks[1].record.activity_since_ns = kNow - 31 * kSecond;
  ASSERT_TRUE(diagnose_hang(ranks, kNow, limits()).has_value());
}

TEST(HangDiagnosis, ARankWaitingInAnEarlierCollectiveOfTheGroupIssuedFewer) {
  const std::vector<RankRecord> ranks = {
      rank_record(0, Activity::Other, 7, 40, {call(6, "allreduce", 45, false)}),
      rank_record(1, Activity::Other, 7, 40, {call(5, "barrier", 40, false, 0, 0)})};
  const auto verdict = diagnose_hang(ranks, kNow, limits());
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->culprit, 1);
  expect_has(verdict->message, "it issued 1 collective(s) fewer of this group than rank 0 (mismatched control flow");
}

TEST(HangDiagnosis, DifferentCallsOfTheSameNumberAreNamed) {
  const std::vector<RankRecord> ranks = {
      rank_record(0, Activity::Other, 7, 40, {call(4, "allreduce", 40, false)}),
      rank_record(1, Activity::Other, 7, 40, {call(4, "broadcast", 39, false, 0, 16)})};
  const auto verdict = diagnose_hang(ranks, kNow, limits());
  ASSERT_TRUE(verdict.has_value());
  expect_has(verdict->message, "collective #4 of group 'world' differs between ranks: rank 0 called allreduce #4 of "
                               "group 'world' (1024 Float) and has waited in it 40 s, rank 1 called broadcast #4 of "
                               "group 'world' (16 Float)");
}

// Stopped inside a collective its peers completed: the peers' next waits name it.
TEST(HangDiagnosis, ARankStoppedInsideACollectiveIsNamedByThePeersNextWait) {
  const std::vector<RankRecord> ranks = {
      rank_record(0, Activity::Other, 3, 31, {call(25, "allgather_into", 32, true), call(26, "allreduce", 31, false)}),
      rank_record(1, Activity::Other, 2, 33, {call(25, "allgather_into", 32, false)}, /*stopped=*/true)};
  const auto verdict = diagnose_hang(ranks, kNow, limits());
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->culprit, 1);
  expect_has(verdict->message, "rank 1 (local_rank 1, pid 101) did not reach allreduce #26 of group 'world' (1024 "
                               "Float): it is stopped (SIGSTOP;");
  EXPECT_EQ(verdict->message.find("rank 1 has waited"), std::string::npos) << verdict->message;
}

TEST(HangDiagnosis, AllJoinedAndNoneStoppedIsNotAHangYet) {
  std::vector<RankRecord> ranks = {rank_record(0, Activity::Other, 7, 40, {call(4, "allreduce", 40, false)}),
                                   rank_record(1, Activity::Other, 7, 40, {call(4, "allreduce", 40, false)})};
  EXPECT_FALSE(diagnose_hang(ranks, kNow, limits()).has_value());  // slow transport: the collective timeout decides
  ranks[1].stopped = true;
  const auto verdict = diagnose_hang(ranks, kNow, limits());
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->culprit, 1);
  expect_has(verdict->message, "rank 1 (local_rank 1, pid 101) is stopped (SIGSTOP) inside allreduce #4");
}

TEST(HangDiagnosis, ARecvFromAStoppedPeerNamesThePeer) {
  const std::vector<RankRecord> ranks = {
      rank_record(0, Activity::Forward, 7, 40, {call(-1, "send", 50, true, 0, 64, 1)}, true),
      rank_record(1, Activity::Forward, 7, 40, {call(-1, "recv", 35, false, 0, 64, 0)})};
  const auto verdict = diagnose_hang(ranks, kNow, limits());
  ASSERT_TRUE(verdict.has_value());
  EXPECT_EQ(verdict->culprit, 0);
  expect_has(verdict->message, "rank 0 (local_rank 0, pid 100) did not reach the other side of rank 1's recv from "
                               "rank 0 (64 Float): it is stopped");
}

TEST(HangDiagnosis, UnreadableRecordsAreLeftOut) {
  std::vector<RankRecord> ranks = {rank_record(0, Activity::Other, 7, 40, {call(4, "allreduce", 40, false)}),
                                   RankRecord{}};
  EXPECT_FALSE(diagnose_hang(ranks, kNow, limits()).has_value());  // the other side is not known here
}

}  // namespace
}  // namespace paisoar::launch
