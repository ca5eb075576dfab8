// `paisoar bench memory`: what the memory remedies cost and save, in two
// sections (--section): ZeRO against plain DDP (bench/zero_memory_bench.cpp)
// and, here, activation checkpointing: peak activation memory (the
// tracking CPU allocator's peak above the step's start, gradients already
// allocated) and step time of a deep GPT-style block stack, with and without
// checkpointing every block. Target (issue #7): at least 50% less peak
// activation memory for at most 40% more step time.
#include <torch/torch.h>

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "apps/paisoar-core/commands.h"
#include "bench/measure_pair.h"
#include "bench/zero_memory_bench.h"
#include "paisoar/memory.h"
#include "paisoar/models/gpt.h"

namespace paisoar::app {
namespace {

struct MemoryBenchOptions {
  int layers = 12;
  int64_t batch = 8, seq = 128, embd = 128;
  int repeats = 5;
  int iters = 3;  // steps per sample
  std::string json = "memory_bench.json";
  std::string section = "all";  // checkpoint, zero or all
  ZeroMemoryBenchOptions zero;
};

struct CheckpointRow {
  int64_t plain_peak = 0, ckpt_peak = 0;
  double plain_s = 0, ckpt_s = 0;
};

CheckpointRow checkpoint_section(const MemoryBenchOptions& o) {
  memory::install_cpu_tracking_allocator();
  torch::manual_seed(0);
  models::GptOptions g;
  g.n_layer = o.layers;
  g.n_embd = o.embd;
  g.block_size = o.seq;
  std::vector<models::GptBlock> blocks;
  std::vector<torch::Tensor> params;
  for (int i = 0; i < o.layers; ++i) {
    blocks.emplace_back(g);
    for (const auto& p : blocks.back()->parameters()) params.push_back(p);
  }
  const auto x = torch::randn({o.batch, o.seq, o.embd});
  auto step = [&](bool checkpointing) {
    for (auto& p : params) {
      if (p.grad().defined()) p.mutable_grad().zero_();  // gradients stay allocated
    }
    auto h = x;
    for (auto& b : blocks) h = checkpointing ? memory::checkpointed(b, h) : b->forward(h);
    h.square().mean().backward();
  };
  step(false);  // allocates the gradients
  auto peak_of = [&](bool checkpointing) {
    memory::PeakMeter meter;
    step(checkpointing);
    return meter.peak_above_start();
  };
  CheckpointRow row;
  row.plain_peak = peak_of(false);
  row.ckpt_peak = peak_of(true);
  auto [ckpt_s, plain_s] = bench::measure_pair(o.iters, o.repeats, [&] { step(true); },
                                               [&] { step(false); }, [] {});
  row.ckpt_s = ckpt_s;
  row.plain_s = plain_s;
  return row;
}

void checkpoint_report(const MemoryBenchOptions& o, nlohmann::json& out) {
  out["threads"] = torch::get_num_threads();
  std::printf("paisoar bench memory: activation checkpointing, %d GPT blocks (C=%ld, B=%ld, T=%ld), "
              "median of %d samples of %d steps, %d threads\n",
              o.layers, static_cast<long>(o.embd), static_cast<long>(o.batch), static_cast<long>(o.seq),
              o.repeats, o.iters, torch::get_num_threads());
  const auto row = checkpoint_section(o);
  const double mem_ratio = static_cast<double>(row.ckpt_peak) / static_cast<double>(row.plain_peak);
  const double time_ratio = row.ckpt_s / row.plain_s;
  std::printf("%-22s %16s %14s\n", "", "peak act (MiB)", "step (ms)");
  std::printf("%-22s %16.1f %14.1f\n", "no checkpointing", row.plain_peak / 1048576.0, row.plain_s * 1e3);
  std::printf("%-22s %16.1f %14.1f\n", "checkpoint per block", row.ckpt_peak / 1048576.0, row.ckpt_s * 1e3);
  std::printf("peak activation memory %.0f%% less, step time %+.0f%% (target: >= 50%% less, <= +40%%)\n",
              (1 - mem_ratio) * 100, (time_ratio - 1) * 100);
  out["activation_checkpointing"] = {
      {"layers", o.layers}, {"batch", o.batch}, {"seq", o.seq}, {"embd", o.embd},
      {"plain_peak_bytes", row.plain_peak}, {"checkpointed_peak_bytes", row.ckpt_peak},
      {"plain_step_ms", row.plain_s * 1e3}, {"checkpointed_step_ms", row.ckpt_s * 1e3},
      {"peak_ratio", mem_ratio}, {"time_ratio", time_ratio}};
}

// The sections already in `path` (so a run of one section keeps the other's figures).
nlohmann::json existing_results(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::object();
  auto old = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return old.is_object() ? old : nlohmann::json::object();
}

int run_memory_bench(const MemoryBenchOptions& o) {
  nlohmann::json out = existing_results(o.json);
  if (o.section != "zero") checkpoint_report(o, out);
  if (o.section != "checkpoint") out["zero"] = zero_memory_section(o.zero);
  std::ofstream(o.json) << out.dump(2) << "\n";
  std::printf("wrote %s\n", o.json.c_str());
  return 0;
}

}  // namespace

Command add_bench_memory_command(CLI::App& bench) {
  auto o = std::make_shared<MemoryBenchOptions>();
  auto* cmd = bench.add_subcommand(
      "memory", "memory remedies: ZeRO stages 1-3 against DDP, activation checkpointing's savings and cost");
  cmd->add_option("--section", o->section, "which to run: checkpoint, zero or all")
      ->check(CLI::IsMember({"checkpoint", "zero", "all"}));
  cmd->add_option("--layers", o->layers, "transformer blocks")->check(CLI::Range(1, 1000));
  cmd->add_option("--batch", o->batch, "sequences per step")->check(CLI::Range(1, 4096));
  cmd->add_option("--seq", o->seq, "tokens per sequence")->check(CLI::Range(1, 65536));
  cmd->add_option("--embd", o->embd, "model width (divisible by 4 heads)")->check(CLI::Range(4, 65536));
  cmd->add_option("--repeats", o->repeats, "samples (median kept)")->check(CLI::Range(1, 1000));
  cmd->add_option("--iters", o->iters, "steps per sample")->check(CLI::Range(1, 100000));
  cmd->add_option("--json", o->json, "where to write the results (other sections already there are kept)");
  add_zero_memory_options(*cmd, o->zero);
  return [o](int, char**) { return run_memory_bench(*o); };
}

}  // namespace paisoar::app
