// LibTorch's per-op profile over the trace window: after a Linear forward and
// backward inside the window, the op trace is valid JSON naming aten::addmm,
// and ops outside the window are not in it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "paisoar/profiler/step_profiler.h"
#include "tests/support/temp_dir.h"

using namespace paisoar::profiler;
using nlohmann::json;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(OpProfile, WindowOpsAreWrittenAsChromeTrace) {
  paisoar::testing::TempDir dir("op_trace");
  ProfilerOptions options;
  options.trace_start_step = 1;
  options.trace_steps = 1;
  options.op_profile = true;
  options.op_trace_path = dir / "ops.json";
  StepProfiler prof(options);
  torch::nn::Linear linear(8, 4);
  for (int64_t step = 0; step < 3; ++step) {
    prof.begin_step(step);
    torch::Tensor loss;
    {
      auto s = prof.phase(Phase::Forward);
      loss = linear(torch::randn({16, 8})).sum();
    }
    {
      auto s = prof.phase(Phase::Backward);
      loss.backward();
    }
    // Outside the window (step 2): an op that must not appear.
    if (step == 2) (void)torch::cosh(torch::ones({2}));
    prof.end_step();
  }
  const std::string text = read_text(options.op_trace_path);
  const json trace = json::parse(text);  // throws on invalid JSON
  const json& events = trace.is_object() ? trace.at("traceEvents") : trace;
  ASSERT_TRUE(events.is_array());
  bool addmm = false, cosh = false;
  for (const auto& e : events) {
    const std::string name = e.value("name", "");
    addmm = addmm || name == "aten::addmm";
    cosh = cosh || name == "aten::cosh";
  }
  EXPECT_TRUE(addmm) << text.substr(0, 2000);
  EXPECT_FALSE(cosh);
}

}  // namespace
