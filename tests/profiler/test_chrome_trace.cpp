// The Chrome trace: valid JSON in the Trace Event format, the expected spans
// (steps, phases, per-bucket communication) with pid = rank, only the window's
// steps, written when the window closes; spans added from another thread.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "paisoar/profiler/bucket_spans.h"
#include "paisoar/profiler/chrome_trace.h"
#include "paisoar/profiler/step_profiler.h"
#include "tests/profiler/fake_clock.h"
#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"

using namespace paisoar::profiler;
using nlohmann::json;
using paisoar::testing::FakeClock;
using paisoar::testing::TempDir;

namespace {

json read_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return json::parse(in);  // throws on invalid JSON
}

// The "X" events only.
std::vector<json> complete_events(const json& trace) {
  std::vector<json> out;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X") out.push_back(e);
  }
  return out;
}

// Runs steps 0..5 with the window at steps 2..3, on the fake clock: each step
// has a 0.25 s data wait, 0.5 s forward, 1 s backward and one bucket span.
void run_steps(StepProfiler& prof, FakeClock& clock) {
  for (int64_t step = 0; step < 6; ++step) {
    prof.begin_step(step);
    {
      auto s = prof.phase(Phase::DataWait);
      clock.advance(0.25);
    }
    {
      auto s = prof.phase(Phase::Forward);
      clock.advance(0.5);
    }
    const double backward_begin = clock.now();
    {
      auto s = prof.phase(Phase::Backward);
      clock.advance(1.0);
    }
    add_bucket_spans(prof, {{0, 4096, backward_begin + 0.25, backward_begin + 0.75}});
    prof.end_step();
  }
}

TEST(ChromeTrace, WindowIsWrittenAsValidTraceEventJson) {
  TempDir dir("trace");
  FakeClock clock;
  ProfilerOptions options;
  options.trace_start_step = 2;
  options.trace_steps = 2;
  options.trace_path = dir / "trace.json";
  options.rank = 3;
  StepProfiler prof(options, clock.clock());
  run_steps(prof, clock);

  const json trace = read_json(options.trace_path);
  EXPECT_EQ(trace.at("displayTimeUnit"), "ms");
  const auto events = complete_events(trace);
  // Per window step: step, data_wait, forward, backward, bucket 0.
  ASSERT_EQ(events.size(), 10u);
  std::multiset<std::string> names;
  std::set<double> steps;
  for (const auto& e : events) {
    names.insert(e.at("name").get<std::string>());
    EXPECT_EQ(e.at("pid"), 3);
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
    ASSERT_TRUE(e.contains("cat") && e.contains("ts") && e.contains("tid"));
    if (e.at("name") == "step") steps.insert(e.at("args").at("step").get<double>());
  }
  EXPECT_EQ(steps, (std::set<double>{2, 3}));
  for (const char* name : {"step", "data_wait", "forward", "backward", "bucket 0"}) {
    EXPECT_EQ(names.count(name), 2u) << name;
  }

  // Timestamps in microseconds of the profiler clock: the fake clock starts at
  // 1000 s and each step takes 1.75 s, so step 2 begins at 1003.5 s.
  const auto first_step = std::find_if(events.begin(), events.end(),
                                       [](const json& e) { return e.at("name") == "step"; });
  EXPECT_DOUBLE_EQ(first_step->at("ts").get<double>(), 1003.5e6);
  EXPECT_DOUBLE_EQ(first_step->at("dur").get<double>(), 1.75e6);

  // The bucket: on the communication row, with its bytes.
  const auto bucket = std::find_if(events.begin(), events.end(),
                                   [](const json& e) { return e.at("name") == "bucket 0"; });
  EXPECT_EQ(bucket->at("cat"), "communication");
  EXPECT_EQ(bucket->at("tid"), kCommunicationRow);
  EXPECT_EQ(bucket->at("args").at("bytes"), 4096.0);
  EXPECT_DOUBLE_EQ(bucket->at("dur").get<double>(), 0.5e6);

  // Rows are named for the viewer.
  std::set<std::string> meta;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M") meta.insert(e.at("args").at("name").get<std::string>());
  }
  EXPECT_EQ(meta, (std::set<std::string>{"rank 3", "training", "communication"}));
}

TEST(ChromeTrace, SpansOutsideTheWindowAreDropped) {
  FakeClock clock;
  ProfilerOptions options;
  options.trace_start_step = 1;
  options.trace_steps = 1;
  StepProfiler prof(options, clock.clock());
  prof.begin_step(0);
  EXPECT_FALSE(prof.add_span("early", "x", 0, 1));
  prof.end_step();
  prof.begin_step(1);
  EXPECT_TRUE(prof.add_span("inside", "x", 0, 1));
  prof.end_step();
  prof.begin_step(2);
  EXPECT_FALSE(prof.add_span("late", "x", 0, 1));
  prof.end_step();
  const auto spans = prof.trace_spans();
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].name, "inside");
  EXPECT_EQ(spans[1].name, "step");
}

// Steps that jump past the window's end still close it (and write the trace).
TEST(ChromeTrace, WindowClosesWhenStepsSkipItsEnd) {
  TempDir dir("trace_skip");
  FakeClock clock;
  ProfilerOptions options;
  options.trace_start_step = 0;
  options.trace_steps = 4;
  options.trace_path = dir / "t.json";
  StepProfiler prof(options, clock.clock());
  for (int64_t step : {0, 2, 10}) {
    prof.begin_step(step);
    prof.end_step();
  }
  EXPECT_EQ(complete_events(read_json(options.trace_path)).size(), 2u);
}

TEST(ChromeTrace, SpansFromAnotherThreadAreKept) {
  ProfilerOptions options;
  options.trace_start_step = 0;
  options.trace_steps = 1;
  StepProfiler prof(options);
  prof.begin_step(0);
  std::thread comm([&] {
    for (int i = 0; i < 100; ++i) {
      const double t = StepProfiler::steady_now_s();
      prof.add_span("allreduce", "communication", t, t);
    }
  });
  for (int i = 0; i < 100; ++i) {
    auto s = prof.phase(Phase::Other);
  }
  comm.join();
  prof.end_step();
  EXPECT_EQ(prof.trace_spans().size(), 201u);
}

TEST(ChromeTrace, WriteNeedsAPath) {
  StepProfiler prof;
  paisoar::testing::expect_error([&] { prof.write_chrome_trace(); }, {"trace_path"});
  TempDir dir("trace_empty");
  prof.write_chrome_trace(dir / "empty.json");  // an empty window is still a valid trace
  EXPECT_TRUE(complete_events(read_json(dir / "empty.json")).empty());
}

TEST(ChromeTrace, OddBytesInNamesStillGiveValidJson) {
  TraceSpan span;
  span.name = "bad \xff name \"quoted\"";
  span.end_s = 1;
  const std::string text = chrome_trace_json({span}, 0);
  const json trace = json::parse(text);
  EXPECT_EQ(complete_events(trace).size(), 1u);
}

}  // namespace
