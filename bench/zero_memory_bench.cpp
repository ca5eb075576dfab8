// The ZeRO section of `paisoar bench memory`: launches `paisoar bench
// zero-memory-worker` ranks once per mode, then tabulates what one rank holds
// (parameters, gradients, AdamW state) in bytes per parameter next to
// docs/ZERO.md's formula, the steps' peak (tracking allocator and VmHWM) and
// the step time. The modes train the same model on the same batches, so their
// losses must agree; the largest difference from DDP's is printed as a check.
#include "bench/zero_memory_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "apps/paisoar-core/commands.h"
#include "bench/child_process.h"

namespace paisoar::app {
namespace {

// Bytes per parameter (of its stage, in a pipeline) one rank holds at rest
// with fp32 AdamW (docs/ZERO.md), over n data ranks.
double formula(const std::string& mode, double n) {
  if (mode == "zero1") return 4 + 4 + 8 / n;
  if (mode == "zero2") return 4 + 12 / n;
  if (mode == "zero3" || mode == "zero3_pp2") return 16 / n;
  return 16;
}

bool pipelined(const std::string& mode) { return mode.find("_pp2") != std::string::npos; }

double max_over_ranks(const nlohmann::json& ranks, const std::string& field) {
  double m = 0;
  for (const auto& r : ranks) m = std::max(m, r[field].get<double>());
  return m;
}

double mib(double bytes) { return bytes / 1048576.0; }

}  // namespace

void add_zero_memory_options(CLI::App& cmd, ZeroMemoryBenchOptions& o) {
  cmd.add_option("--nproc", o.nproc, "ZeRO section: ranks (processes)")->check(CLI::Range(1, 64));
  cmd.add_option("--zero-modes", o.modes, "ZeRO section: ddp, zero1, zero2, zero3, ddp_pp2, zero3_pp2 (a 2-stage "
                                          "pipeline over --nproc data ranks: 2 x --nproc processes)")
      ->delimiter(',')
      ->check(CLI::IsMember({"ddp", "zero1", "zero2", "zero3", "ddp_pp2", "zero3_pp2"}));
  cmd.add_option("--zero-vocab", o.run.vocab, "ZeRO section: GPT vocabulary")->check(CLI::Range(2, 1 << 20));
  cmd.add_option("--zero-layers", o.run.layers, "ZeRO section: GPT blocks")->check(CLI::Range(1, 1000));
  cmd.add_option("--zero-embd", o.run.embd, "ZeRO section: GPT width (divisible by --zero-heads)")
      ->check(CLI::Range(1, 65536));
  cmd.add_option("--zero-heads", o.run.heads, "ZeRO section: attention heads")->check(CLI::Range(1, 1024));
  cmd.add_option("--zero-batch", o.run.batch, "ZeRO section: sequences per rank and step")
      ->check(CLI::Range(1, 4096));
  cmd.add_option("--zero-seq", o.run.seq, "ZeRO section: tokens per sequence")->check(CLI::Range(1, 65536));
  cmd.add_option("--zero-warmup", o.run.warmup, "ZeRO section: untimed steps")->check(CLI::Range(0, 1000));
  cmd.add_option("--zero-steps", o.run.steps, "ZeRO section: timed steps")->check(CLI::Range(1, 1000));
  cmd.add_option("--zero-threads", o.run.threads, "ZeRO section: intra-op threads per rank")
      ->check(CLI::Range(1, 256));
}

nlohmann::json zero_memory_section(const ZeroMemoryBenchOptions& o) {
  if (o.run.embd % o.run.heads != 0) {
    throw std::invalid_argument("--zero-embd " + std::to_string(o.run.embd) + " is not divisible by --zero-heads " +
                                std::to_string(o.run.heads) + "; pick a width that is a multiple of the heads");
  }
  std::printf("paisoar bench memory: ZeRO, GPT stack (%ld blocks, C=%ld, %ld heads, vocab %ld, untied head), "
              "AdamW, %d ranks x %d thread(s), B=%ld T=%ld per rank, %d warmup + %d timed steps\n",
              static_cast<long>(o.run.layers), static_cast<long>(o.run.embd), static_cast<long>(o.run.heads),
              static_cast<long>(o.run.vocab), o.nproc, o.run.threads, static_cast<long>(o.run.batch),
              static_cast<long>(o.run.seq), o.run.warmup, o.run.steps);
  nlohmann::json section = {{"nproc", o.nproc},         {"vocab", o.run.vocab}, {"layers", o.run.layers},
                            {"embd", o.run.embd},       {"heads", o.run.heads}, {"batch", o.run.batch},
                            {"seq", o.run.seq},         {"warmup", o.run.warmup}, {"steps", o.run.steps},
                            {"threads_per_rank", o.run.threads}, {"optimizer", "AdamW"},
                            {"modes", nlohmann::json::object()}};
  for (const auto& mode : o.modes) {
    std::printf("  %s ...\n", mode.c_str());
    std::fflush(stdout);
    auto run = o.run;
    run.mode = mode;
    std::vector<std::string> cmd = {self_executable(), "bench", "zero-memory-worker"};
    for (auto& flag : bench::zero_memory_run_flags(run)) cmd.push_back(flag);
    section["modes"][mode] = bench::run_json_child(launch_argv(pipelined(mode) ? 2 * o.nproc : o.nproc, cmd),
                                                   mode + " ranks");
  }
  const double n_params = section["modes"][o.modes.front()]["params"].get<double>();
  section["params"] = n_params;
  std::printf("%.1fM parameters; per rank (rank 0's bytes, per parameter of the part it holds: the whole "
              "model, or its pipeline stage; peaks: the largest rank's):\n", n_params / 1e6);
  std::printf("  %-9s %9s %9s %9s %9s %8s %8s %10s %10s %9s\n", "mode", "params", "grads", "optim", "total",
              "B/param", "formula", "step peak", "VmHWM", "step ms");
  const auto& ddp_losses = section["modes"].contains("ddp") ? section["modes"]["ddp"]["losses"] : nlohmann::json();
  for (const auto& mode : o.modes) {
    auto& m = section["modes"][mode];
    const auto& r0 = m["ranks"][0];
    const double total = r0["param_bytes"].get<double>() + r0["grad_bytes"].get<double>() +
                         r0["optimizer_state_bytes"].get<double>();
    const double held = r0["held_params"].get<double>();
    m["bytes_per_param"] = total / held;
    m["formula_bytes_per_param"] = formula(mode, o.nproc);
    if (ddp_losses.is_array()) {
      double diff = 0;
      for (size_t i = 0; i < ddp_losses.size() && i < m["losses"].size(); ++i) {
        diff = std::max(diff, std::abs(m["losses"][i].get<double>() - ddp_losses[i].get<double>()));
      }
      m["max_loss_diff_vs_ddp"] = diff;
    }
    std::printf("  %-9s %9.1f %9.1f %9.1f %9.1f %8.3f %8.3f %10.1f %10.1f %9.0f\n", mode.c_str(),
                mib(r0["param_bytes"].get<double>()), mib(r0["grad_bytes"].get<double>()),
                mib(r0["optimizer_state_bytes"].get<double>()), mib(total), total / held,
                formula(mode, o.nproc), mib(max_over_ranks(m["ranks"], "step_peak_bytes")),
                mib(max_over_ranks(m["ranks"], "peak_rss_bytes")), r0["step_ms"].get<double>());
  }
  std::printf("  (MiB; step peak: the tracking allocator's peak of live tensors over all steps; VmHWM: the "
              "process's peak RSS, model construction included)\n");
  if (ddp_losses.is_array()) {
    double worst = 0;
    for (const auto& mode : o.modes) worst = std::max(worst, section["modes"][mode].value("max_loss_diff_vs_ddp", 0.0));
    std::printf("  losses of every step agree with DDP's within %.2g\n", worst);
  }
  return section;
}

}  // namespace paisoar::app
