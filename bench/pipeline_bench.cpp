// `paisoar bench pipeline`: issue #8's three pipeline measurements, on rank
// threads (bench/pipeline_runs.h): the bubble of GPipe and 1F1B against
// (P-1)/(M+P-1), the peak activation memory of 1F1B against GPipe, and the
// automatic partitioner's slowest stage against the naive equal-layer split.
// Targets: bubble within 10% of the formula; 1F1B's peak activations at most
// P/M of GPipe's (plus a small constant); the automatic split's slowest stage
// at least 20% faster than the naive one.
#include <torch/torch.h>

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "apps/paisoar-core/commands.h"
#include "bench/pipeline_measure.h"
#include "bench/pipeline_runs.h"

namespace paisoar::app {
namespace {

using namespace paisoar::bench;

struct PipelineBenchOptions {
  std::string section = "all";  // bubble, overhead, memory, balance or all
  std::vector<int> stages = {2, 4};
  std::vector<int> micro_batches = {1, 2, 4, 8, 16};
  double forward_ms = 4;  // bubble: per stage and micro-batch; backward is twice this
  int steps = 5;          // bubble: timed steps per (P, schedule, M), median kept
  std::vector<std::string> backends = {"gloo", "shm"};  // bubble: what the stage links run over
  int overhead_micro_batches = 64;
  int memory_micro_batches = 8;
  int64_t memory_width = 512, memory_rows = 256;
  int small_layers = 7;
  int64_t width = 256, wide = 1792, rows = 256;
  int balance_micro_batches = 4, rounds = 2, round_steps = 3;
  std::string json = "pipeline_bench.json";
};

nlohmann::json bubble_report(const PipelineBenchOptions& o) {
  std::printf("bubble: one sleeping layer per stage (forward %.1f ms, backward %.1f ms), median of %d steps\n",
              o.forward_ms, 2 * o.forward_ms, o.steps);
  std::printf("%-8s %3s %-6s %4s %9s %9s %8s %10s %10s\n", "backend", "P", "sched", "M", "formula", "measured", "gap",
              "step_ms", "ideal_ms");
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json met_by_backend = nlohmann::json::object();
  for (const std::string& name : o.backends) {
    int met = 0, total = 0;
    const comm::Backend backend = name == "threads" ? comm::Backend::Threads : comm::backend_named(name, "--backends");
    for (const auto& r : run_bubble(o.stages, o.micro_batches, o.forward_ms, o.steps, backend)) {
      const double gap = relative_gap(r.measured, r.formula);
      met += gap <= 0.10;
      ++total;
      std::printf("%-8s %3d %-6s %4d %9.3f %9.3f %7.0f%% %10.1f %10.1f\n", name.c_str(), r.stages,
                  pipeline::to_string(r.schedule), r.micro_batches, r.formula, r.measured, gap * 100, r.step_ms,
                  r.ideal_step_ms);
      rows.push_back({{"backend", name}, {"stages", r.stages}, {"schedule", pipeline::to_string(r.schedule)},
                      {"micro_batches", r.micro_batches}, {"formula", r.formula}, {"measured", r.measured},
                      {"relative_gap", gap}, {"step_ms", r.step_ms}, {"ideal_step_ms", r.ideal_step_ms}});
    }
    std::printf("%s: bubble within 10%% of the formula (relative): %d of %d rows\n", name.c_str(), met, total);
    met_by_backend[name] = met;
  }
  std::printf("\n");
  return {{"forward_ms", o.forward_ms}, {"steps", o.steps}, {"rows", rows}, {"rows_within_10pct", met_by_backend}};
}

nlohmann::json overhead_report(const PipelineBenchOptions& o) {
  std::printf("overhead: stages whose layer does no work, M=%d, median of %d steps; the executor's cost per "
              "micro-batch (target: <= 0.1 ms)\n", o.overhead_micro_batches, o.steps);
  std::printf("%-8s %3s %-6s %4s %14s %14s\n", "backend", "P", "sched", "M", "ms per mb", "outside ops");
  nlohmann::json rows = nlohmann::json::array();
  for (const std::string& name : o.backends) {
    const comm::Backend backend = name == "threads" ? comm::Backend::Threads : comm::backend_named(name, "--backends");
    for (const auto& r : run_overhead(o.stages, o.overhead_micro_batches, o.steps, backend)) {
      std::printf("%-8s %3d %-6s %4d %14.3f %14.3f\n", name.c_str(), r.stages, pipeline::to_string(r.schedule),
                  r.micro_batches, r.per_micro_batch_ms, r.outside_ops_ms);
      rows.push_back({{"backend", name}, {"stages", r.stages}, {"schedule", pipeline::to_string(r.schedule)},
                      {"micro_batches", r.micro_batches}, {"per_micro_batch_ms", r.per_micro_batch_ms},
                      {"outside_ops_ms", r.outside_ops_ms}});
    }
  }
  std::printf("\n");
  return {{"steps", o.steps}, {"rows", rows}};
}

nlohmann::json memory_row(const MemoryRow& row) {
  return {{"peak_in_flight", row.peak_in_flight}, {"activation_bytes", row.activation_bytes},
          {"process_peak_bytes", row.process_peak_bytes}};
}

nlohmann::json memory_report(const PipelineBenchOptions& o) {
  const MemoryResult r = run_memory(o.memory_micro_batches, o.memory_width, o.memory_rows);
  const double bound = static_cast<double>(r.stages) / r.micro_batches;
  std::printf("memory: [Linear(%ld,%ld), Tanh] x 4 in P=%d stages, M=%d micro-batches of %ld rows\n",
              static_cast<long>(r.width), static_cast<long>(r.width), r.stages, r.micro_batches,
              static_cast<long>(r.rows));
  std::printf("%5s %12s %10s %10s %14s %14s %12s\n", "stage", "1 mb (MiB)", "gpipe mbs", "1f1b mbs", "gpipe MiB",
              "1f1b MiB", "1f1b/gpipe");
  nlohmann::json stages = nlohmann::json::array();
  for (int s = 0; s < r.stages; ++s) {
    const double ratio = static_cast<double>(r.one_f_one_b.activation_bytes[s]) / r.gpipe.activation_bytes[s];
    std::printf("%5d %12.2f %10d %10d %14.2f %14.2f %12.3f\n", s, r.micro_batch_bytes[s] / 1048576.0,
                r.gpipe.peak_in_flight[s], r.one_f_one_b.peak_in_flight[s], r.gpipe.activation_bytes[s] / 1048576.0,
                r.one_f_one_b.activation_bytes[s] / 1048576.0, ratio);
    stages.push_back({{"stage", s}, {"micro_batch_bytes", r.micro_batch_bytes[s]}, {"ratio", ratio}});
  }
  const double process_ratio = static_cast<double>(r.one_f_one_b.process_peak_bytes) / r.gpipe.process_peak_bytes;
  std::printf("whole process (all stages, tracking allocator peak above the step's start): gpipe %.2f MiB, "
              "1f1b %.2f MiB, ratio %.3f\n",
              r.gpipe.process_peak_bytes / 1048576.0, r.one_f_one_b.process_peak_bytes / 1048576.0, process_ratio);
  std::printf("target: 1f1b/gpipe <= P/M = %.3f (plus a small constant)\n\n", bound);
  return {{"stages", r.stages}, {"micro_batches", r.micro_batches}, {"width", r.width}, {"rows", r.rows},
          {"p_over_m", bound}, {"per_stage", stages}, {"gpipe", memory_row(r.gpipe)},
          {"1f1b", memory_row(r.one_f_one_b)}, {"process_ratio", process_ratio}};
}

nlohmann::json plan_json(const PlanTiming& t) {
  return {{"bounds", t.bounds}, {"profiled_stage_ms", t.profiled_stage_ms},
          {"measured_stage_ms", t.measured_stage_ms}, {"step_ms", t.step_ms},
          {"profiled_slowest_ms", t.profiled_slowest_ms()}, {"measured_slowest_ms", t.measured_slowest_ms()}};
}

void print_plan(const char* name, const PlanTiming& t) {
  std::printf("%-6s stages", name);
  for (size_t s = 0; s + 1 < t.bounds.size(); ++s) std::printf(" [%d-%d]", t.bounds[s], t.bounds[s + 1] - 1);
  std::printf("  profiled");
  for (double v : t.profiled_stage_ms) std::printf(" %.1f", v);
  std::printf(" ms  measured");
  for (double v : t.measured_stage_ms) std::printf(" %.1f", v);
  std::printf(" ms  step %.1f ms\n", t.step_ms);
}

nlohmann::json balance_report(const PipelineBenchOptions& o) {
  const BalanceResult r = run_balance(o.small_layers, o.width, o.wide, o.rows, o.balance_micro_batches, o.rounds,
                                      o.round_steps);
  std::printf("balance: %d x Linear(%ld,%ld) then Linear(%ld,%ld), P=%d, 1f1b, M=%d of %ld rows; per-stage "
              "compute per step (median of %d steps)\n",
              r.small_layers, static_cast<long>(r.width), static_cast<long>(r.width), static_cast<long>(r.width),
              static_cast<long>(r.wide), r.stages, r.micro_batches, static_cast<long>(r.rows),
              o.rounds * o.round_steps);
  std::printf("profiled layer ms:");
  for (double v : r.layer_ms) std::printf(" %.2f", v);
  std::printf("\n");
  print_plan("auto", r.automatic);
  print_plan("naive", r.naive);
  const double profiled = 1 - r.automatic.profiled_slowest_ms() / r.naive.profiled_slowest_ms();
  const double measured = 1 - r.automatic.measured_slowest_ms() / r.naive.measured_slowest_ms();
  const double step = 1 - r.automatic.step_ms / r.naive.step_ms;
  std::printf("auto's slowest stage is %.0f%% faster (profiled), %.0f%% (measured); step %.0f%% faster "
              "(target: >= 20%%)\n\n",
              profiled * 100, measured * 100, step * 100);
  return {{"small_layers", r.small_layers}, {"width", r.width}, {"wide", r.wide}, {"rows", r.rows},
          {"stages", r.stages}, {"micro_batches", r.micro_batches}, {"layer_ms", r.layer_ms},
          {"auto", plan_json(r.automatic)}, {"naive", plan_json(r.naive)},
          {"slowest_faster_profiled", profiled}, {"slowest_faster_measured", measured}, {"step_faster", step}};
}

int run_pipeline_bench(const PipelineBenchOptions& o) {
  torch::set_num_threads(1);  // one intra-op thread per rank thread
  std::printf("paisoar bench pipeline: rank threads in one process, 1 LibTorch thread each\n\n");
  nlohmann::json out;
  if (o.section == "all" || o.section == "bubble") out["bubble"] = bubble_report(o);
  if (o.section == "all" || o.section == "overhead") out["overhead"] = overhead_report(o);
  if (o.section == "all" || o.section == "memory") out["memory"] = memory_report(o);
  if (o.section == "all" || o.section == "balance") out["balance"] = balance_report(o);
  std::ofstream(o.json) << out.dump(2) << "\n";
  std::printf("wrote %s\n", o.json.c_str());
  return 0;
}

}  // namespace

Command add_bench_pipeline_command(CLI::App& bench) {
  auto o = std::make_shared<PipelineBenchOptions>();
  auto* cmd = bench.add_subcommand(
      "pipeline", "pipeline parallelism: bubble against (P-1)/(M+P-1), 1F1B's memory against GPipe's, "
                  "automatic partition against an equal-layer split");
  cmd->add_option("--section", o->section, "which to run: bubble, overhead, memory, balance or all")
      ->check(CLI::IsMember({"bubble", "overhead", "memory", "balance", "all"}));
  cmd->add_option("--overhead-micro-batches", o->overhead_micro_batches, "overhead: M")->check(CLI::Range(1, 1024));
  cmd->add_option("--stages", o->stages, "bubble: stage counts P, e.g. 2,4")->delimiter(',')
      ->check(CLI::Range(2, 16));
  cmd->add_option("--micro-batches", o->micro_batches, "bubble: micro-batch counts M, e.g. 1,2,4,8,16")
      ->delimiter(',')->check(CLI::Range(1, 1024));
  cmd->add_option("--forward-ms", o->forward_ms, "bubble: forward sleep per stage and micro-batch")
      ->check(CLI::Range(0.1, 1000.0));
  cmd->add_option("--steps", o->steps, "bubble: timed steps per row (median kept)")->check(CLI::Range(1, 1000));
  cmd->add_option("--backends", o->backends, "bubble: what the stage links run over: gloo, shm, threads")
      ->delimiter(',')->check(CLI::IsMember({"gloo", "shm", "threads"}));
  cmd->add_option("--memory-micro-batches", o->memory_micro_batches, "memory: M")->check(CLI::Range(1, 1024));
  cmd->add_option("--rounds", o->rounds, "balance: rounds of both plans, alternating")->check(CLI::Range(1, 100));
  cmd->add_option("--json", o->json, "where to write the results");
  return [o](int, char**) { return run_pipeline_bench(*o); };
}

}  // namespace paisoar::app
