// `paisoar bench diagnosis`: what the hang diagnosis costs a run where
// nothing is wrong. Two thread-ranks over the shared-memory backend run the
// same allreduces with and without a flight record (alternating blocks, the
// median of each), at the sizes where a record weighs most (small ones); and
// the cost of one record and one activity mark on their own. The main job's
// step issues about a dozen collectives and a dozen activity marks: the share
// of its step time follows (docs/BENCHMARKS.md, "Diagnosis").
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/paisoar-core/commands.h"
#include "paisoar/comm/communicator.h"
#include "src/comm/flight_recorder.h"

namespace paisoar::app {
namespace {

struct DiagnosisBenchOptions {
  int repeats = 9;
  int iters = 400;  // allreduces per sample
  std::string json = "diagnosis_bench.json";
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Seconds per allreduce of `numel` floats on two thread-ranks (shared memory),
// with a flight record per rank or without: one sample per block.
double allreduce_s(int64_t numel, int iters, bool recorded) {
  comm::Store store = comm::Store::hash();
  double per_call = 0;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      comm::CommOptions options;
      options.backend = comm::Backend::Shm;
      if (recorded) options.flight_recorder = comm::FlightRecorder::in_memory(rank);
      auto world = comm::Communicator::create(store, rank, 2, options);
      auto t = torch::ones({numel});
      for (int i = 0; i < 20; ++i) world->allreduce(t).wait();  // warm up
      world->barrier().wait();
      const double began = now_s();
      for (int i = 0; i < iters; ++i) world->allreduce(t).wait();
      if (rank == 0) per_call = (now_s() - began) / iters;
    });
  }
  for (auto& t : threads) t.join();
  return per_call;
}

int run_diagnosis_bench(const DiagnosisBenchOptions& o) {
  nlohmann::json out;
  out["threads"] = torch::get_num_threads();
  // One record (issue + done) and one activity mark, on their own.
  auto recorder = comm::FlightRecorder::in_memory(0);
  const int g = recorder->group("world", {0, 1});
  std::vector<double> record_ns, mark_ns;
  for (int r = 0; r < o.repeats; ++r) {
    constexpr int kN = 200000;
    double began = now_s();
    for (int i = 0; i < kN; ++i) comm::FlightRecorder::done(recorder->issue(g, i, "allreduce", "Float", 1024), true);
    record_ns.push_back((now_s() - began) / kN * 1e9);
    began = now_s();
    for (int i = 0; i < kN; ++i) recorder->set_activity(i % 2 ? util::Activity::Forward : util::Activity::Backward, i);
    mark_ns.push_back((now_s() - began) / kN * 1e9);
  }
  out["record_ns"] = median(record_ns);
  out["activity_mark_ns"] = median(mark_ns);
  std::printf("one record (issue + done): %.0f ns; one activity mark: %.0f ns (median of %d)\n", median(record_ns),
              median(mark_ns), o.repeats);
  std::printf("%10s %14s %14s %9s\n", "floats", "plain us", "recorded us", "ratio");
  for (const int64_t numel : {int64_t{64}, int64_t{4096}, int64_t{262144}}) {
    std::vector<double> plain, recorded;
    for (int r = 0; r < o.repeats; ++r) {  // alternating, so drift hits both alike
      plain.push_back(allreduce_s(numel, o.iters, false));
      recorded.push_back(allreduce_s(numel, o.iters, true));
    }
    const double a = median(plain), b = median(recorded);
    std::printf("%10lld %14.2f %14.2f %9.3f\n", static_cast<long long>(numel), a * 1e6, b * 1e6, b / a);
    out["allreduce"].push_back({{"floats", numel}, {"plain_us", a * 1e6}, {"recorded_us", b * 1e6}, {"ratio", b / a}});
  }
  std::ofstream(o.json) << out.dump(2) << "\n";
  std::printf("wrote %s\n", o.json.c_str());
  return 0;
}

}  // namespace

Command add_bench_diagnosis_command(CLI::App& bench) {
  auto o = std::make_shared<DiagnosisBenchOptions>();
  auto* cmd = bench.add_subcommand("diagnosis", "the hang diagnosis' flight record: its cost per collective");
  cmd->add_option("--repeats", o->repeats, "samples (median kept)")->check(CLI::Range(1, 1000));
  cmd->add_option("--iters", o->iters, "allreduces per sample")->check(CLI::Range(1, 1000000));
  cmd->add_option("--json", o->json, "where to write the results");
  return [o](int, char**) { return run_diagnosis_bench(*o); };
}

}  // namespace paisoar::app
