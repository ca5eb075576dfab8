// The flight record as its reader sees it (util::flight::parse, which the
// launcher uses on the file): what a collective leaves there through a real
// Communicator, the activity, the ring keeping the newest 256 entries, and
// entries written from several threads at once all read back whole.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#include "paisoar/comm/communicator.h"
#include "src/comm/flight_recorder.h"
#include "tests/support/thread_ranks.h"

namespace paisoar::comm {
namespace {

using util::Activity;

TEST(FlightRecorder, ACollectiveIsRecordedWithItsNumberSizeAndPhase) {
  Store store = Store::hash();
  std::vector<std::shared_ptr<FlightRecorder>> recorders = {FlightRecorder::in_memory(0),
                                                            FlightRecorder::in_memory(1)};
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      CommOptions options = paisoar::testing::test_options();
      options.flight_recorder = recorders[static_cast<size_t>(rank)];
      auto world = Communicator::create(store, rank, 2, options);
      recorders[static_cast<size_t>(rank)]->set_activity(Activity::Backward, 7);
      auto t = torch::ones({1000});
      world->allreduce(t).wait();
      auto pending = torch::ones({10}, torch::kDouble);
      Work w = world->broadcast(pending, 0);
      if (rank == 0) {
        const auto seen = recorders[0]->snapshot();
        ASSERT_EQ(seen.entries.size(), 2u);
        EXPECT_TRUE(seen.entries[1].pending() || w.is_completed());
      }
      w.wait();
    });
  }
  for (auto& t : threads) t.join();
  for (int rank = 0; rank < 2; ++rank) {
    const util::FlightSnapshot s = recorders[static_cast<size_t>(rank)]->snapshot();
    EXPECT_EQ(s.rank, rank);
    EXPECT_EQ(s.pid, ::getpid());
    EXPECT_EQ(s.activity, Activity::Backward);
    EXPECT_EQ(s.step, 7);
    ASSERT_EQ(s.groups.size(), 1u);
    EXPECT_EQ(s.groups[0].name, "world");
    EXPECT_EQ(s.groups[0].members, (std::vector<int>{0, 1}));
    ASSERT_EQ(s.entries.size(), 2u);
    EXPECT_EQ(s.entries[0].op, "allreduce");
    EXPECT_EQ(s.entries[0].seq, 1);
    EXPECT_EQ(s.entries[0].numel, 1000);
    EXPECT_EQ(s.entries[0].dtype, "Float");
    EXPECT_EQ(s.entries[0].activity, Activity::Backward);
    EXPECT_EQ(s.entries[0].step, 7);
    EXPECT_GT(s.entries[0].ended_ns, s.entries[0].enqueued_ns);
    EXPECT_EQ(s.entries[1].op, "broadcast");
    EXPECT_EQ(s.entries[1].seq, 2);
    EXPECT_EQ(s.entries[1].dtype, "Double");
    EXPECT_FALSE(s.entries[1].pending());
  }
}

TEST(FlightRecorder, TheFileReadsBackAsTheLauncherReadsIt) {
  const std::string path = ::testing::TempDir() + "flight_" + std::to_string(::getpid());
  {
    auto recorder = FlightRecorder::open_file(path, 3);
    const int g = recorder->group("world/g0", {1, 3});
    recorder->set_activity(Activity::Data, 12);
    FlightRecorder::done(recorder->issue(g, 5, "reduce_scatter", "BFloat16", 4096), true);
    recorder->issue(g, -1, "recv", "Float", 8, /*peer=*/1);
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    util::FlightSnapshot s;
    ASSERT_TRUE(util::flight::parse(bytes, bytes, s));
    EXPECT_EQ(s.rank, 3);
    EXPECT_EQ(s.activity, Activity::Data);
    EXPECT_EQ(s.step, 12);
    ASSERT_EQ(s.groups.size(), 1u);
    EXPECT_EQ(s.groups[0].name, "world/g0");
    EXPECT_EQ(s.groups[0].members, (std::vector<int>{1, 3}));
    ASSERT_EQ(s.entries.size(), 2u);
    EXPECT_EQ(s.entries[0].op, "reduce_scatter");
    EXPECT_FALSE(s.entries[0].pending());
    EXPECT_EQ(s.entries[1].peer, 1);
    EXPECT_TRUE(s.entries[1].pending());
    // Not a flight record: too short, or another magic.
    EXPECT_FALSE(util::flight::parse(bytes.substr(0, 100), bytes.substr(0, 100), s));
    std::string other = bytes;
    other[0] = 'X';
    EXPECT_FALSE(util::flight::parse(other, other, s));
  }
  ::unlink(path.c_str());
}

TEST(FlightRecorder, TheRingKeepsTheNewestEntries) {
  auto recorder = FlightRecorder::in_memory(0);
  const int g = recorder->group("world", {0, 1});
  for (int i = 1; i <= 300; ++i) FlightRecorder::done(recorder->issue(g, i, "allreduce", "Float", i), true);
  const auto s = recorder->snapshot();
  ASSERT_EQ(s.entries.size(), util::flight::kCapacity);
  EXPECT_EQ(s.entries.front().seq, 300 - static_cast<int64_t>(util::flight::kCapacity) + 1);
  EXPECT_EQ(s.entries.back().seq, 300);
  // A ticket for an entry the ring has since reused changes nothing.
  auto old = recorder->issue(g, 301, "barrier", "-", 0);
  for (int i = 0; i < static_cast<int>(util::flight::kCapacity); ++i) recorder->issue(g, 302 + i, "allreduce", "Float", 1);
  FlightRecorder::done(old, true);
  EXPECT_TRUE(recorder->snapshot().entries.front().pending());
}

TEST(FlightRecorder, ThreadsRecordingAtOnceLeaveWholeEntries) {
  auto recorder = FlightRecorder::in_memory(0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const int g = recorder->group("group" + std::to_string(t), {0, 1});
      for (int i = 0; i < 2000; ++i) FlightRecorder::done(recorder->issue(g, i, "allreduce", "Float", t), true);
    });
  }
  for (auto& t : threads) t.join();
  const auto s = recorder->snapshot();
  EXPECT_EQ(s.groups.size(), 4u);
  ASSERT_EQ(s.entries.size(), util::flight::kCapacity);
  for (const auto& e : s.entries) {
    EXPECT_EQ(e.op, "allreduce");
    EXPECT_EQ(s.groups[static_cast<size_t>(e.group)].name, "group" + std::to_string(e.numel));
    EXPECT_FALSE(e.pending());
  }
}

TEST(FlightRecorder, AnActivityScopePutsThePreviousOneBack) {
  auto recorder = FlightRecorder::in_memory(0);
  recorder->set_activity(Activity::Other, 3);
  {
    ActivityScope saving(recorder.get(), Activity::Checkpoint);
    EXPECT_EQ(recorder->activity(), Activity::Checkpoint);
  }
  EXPECT_EQ(recorder->activity(), Activity::Other);
  EXPECT_EQ(recorder->snapshot().step, 3);
  ActivityScope nothing(nullptr, Activity::Evaluation);  // no recorder: inert
}

TEST(FlightRecorder, AThreadActivityMarksOnlyThatThreadsCollectives) {
  auto recorder = FlightRecorder::in_memory(0);
  const int g = recorder->group("world", {0, 1});
  recorder->set_activity(Activity::Forward, 4);
  std::thread saver([&] {
    ThreadActivityScope saving(Activity::Checkpoint);
    recorder->issue(g, 1, "allreduce", "Float", 1);
  });
  saver.join();
  recorder->issue(g, 2, "allreduce", "Float", 1);
  const auto s = recorder->snapshot();
  ASSERT_EQ(s.entries.size(), 2u);
  EXPECT_EQ(s.entries[0].activity, Activity::Checkpoint);
  EXPECT_EQ(s.entries[1].activity, Activity::Forward);
  EXPECT_EQ(s.activity, Activity::Forward);
}

}  // namespace
}  // namespace paisoar::comm
