// Per-bucket communication spans from a real DDP run (2 ranks as threads):
// the reducer records one span per bucket each step, their bytes add up to the
// model's gradient bytes, and the profiler puts them in the window's trace,
// inside the step that produced them, with pid = rank.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "paisoar/ddp.h"
#include "paisoar/profiler/bucket_spans.h"
#include "paisoar/profiler/step_profiler.h"
#include "tests/support/temp_dir.h"
#include "tests/support/thread_ranks.h"

using namespace paisoar;
using nlohmann::json;

namespace {

struct MlpImpl : torch::nn::Module {
  MlpImpl() {
    fc1 = register_module("fc1", torch::nn::Linear(32, 64));
    fc2 = register_module("fc2", torch::nn::Linear(64, 64));
    fc3 = register_module("fc3", torch::nn::Linear(64, 4));
  }
  torch::Tensor forward(torch::Tensor x) {
    return fc3(torch::relu(fc2(torch::relu(fc1(x)))));
  }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
};
TORCH_MODULE(Mlp);

TEST(DdpBucketSpans, ReducerSpansReachTheTrace) {
  paisoar::testing::TempDir dir("ddp_trace");
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    Mlp model;
    int64_t grad_bytes = 0;
    for (const auto& p : model->parameters()) grad_bytes += p.numel() * p.element_size();
    ddp::DdpOptions options;
    options.first_bucket_mb = 0.004;  // ~4 KB: several buckets for this 26 KB model
    options.bucket_cap_mb = 0.008;
    DistributedDataParallel<Mlp> ddp(model, comm, options);
    torch::optim::SGD opt(model->parameters(), 0.1);

    profiler::ProfilerOptions popts;
    popts.trace_start_step = 1;
    popts.trace_steps = 2;
    popts.trace_path = dir / ("trace_" + std::to_string(rank) + ".json");
    popts.rank = rank;
    profiler::StepProfiler prof(popts);
    size_t buckets = 0;
    for (int64_t step = 0; step < 4; ++step) {
      prof.begin_step(step);
      opt.zero_grad();
      torch::Tensor loss;
      {
        auto s = prof.phase(profiler::Phase::Forward);
        loss = ddp(torch::randn({8, 32})).pow(2).mean();
      }
      {
        auto s = prof.phase(profiler::Phase::Backward);
        loss.backward();
      }
      const auto& stats = ddp.reducer().last_stats();
      ASSERT_EQ(stats.bucket_spans.size(), stats.buckets);
      ASSERT_GT(stats.buckets, 1u);
      int64_t bytes = 0;
      for (size_t b = 0; b < stats.bucket_spans.size(); ++b) {
        const auto& span = stats.bucket_spans[b];
        EXPECT_EQ(span.bucket, b);
        EXPECT_LE(span.launch_s, span.finish_s);
        bytes += span.bytes;
      }
      EXPECT_EQ(bytes, grad_bytes);
      prof.add(profiler::Phase::Communication, stats.exposed_comm_s, profiler::Phase::Backward);
      const size_t kept = profiler::add_bucket_spans(prof, stats.bucket_spans);
      EXPECT_EQ(kept, prof.in_window(step) ? stats.buckets : 0u);
      buckets = stats.buckets;
      {
        auto s = prof.phase(profiler::Phase::Optimizer);
        opt.step();
      }
      prof.end_step();
    }

    std::ifstream in(popts.trace_path);
    const json trace = json::parse(in);
    std::map<double, std::pair<double, double>> steps;  // step -> [ts, ts + dur]
    std::vector<json> bucket_events;
    for (const auto& e : trace.at("traceEvents")) {
      if (e.at("ph") != "X") continue;
      EXPECT_EQ(e.at("pid"), rank);
      const double ts = e.at("ts").get<double>(), end = ts + e.at("dur").get<double>();
      if (e.at("name") == "step") steps[e.at("args").at("step").get<double>()] = {ts, end};
      if (e.at("cat") == "communication") bucket_events.push_back(e);
    }
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_EQ(steps.begin()->first, 1.0);
    ASSERT_EQ(bucket_events.size(), 2 * buckets);
    for (const auto& e : bucket_events) {
      EXPECT_EQ(e.at("name").get<std::string>().rfind("bucket ", 0), 0u);
      // Inside one of the window's steps (both on the steady clock).
      const double ts = e.at("ts").get<double>(), end = ts + e.at("dur").get<double>();
      bool inside = false;
      for (const auto& [step, range] : steps) inside |= ts >= range.first && end <= range.second;
      EXPECT_TRUE(inside) << e.dump();
    }
  });
}

}  // namespace
