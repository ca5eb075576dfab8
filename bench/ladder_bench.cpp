// `paisoar bench ladder`: the article's "100x is a product of factors",
// measured on this machine. The same training job (FashionCnn on
// Fashion-MNIST with light augmentation, `paisoar train` and its config) is
// run rung by rung: a naive single process loading in its training thread,
// then + the prefetching data pipeline, + bf16 autocast, + 2 ranks of DDP,
// + overlap and fp16 gradient compression. Each rung reports training
// samples/s (the Trainer's own figure, evaluation excluded) and its factor over
// the previous rung. A rung that makes things slower here (bf16 on CPUs
// without AVX-512) is reported and not kept: the next rungs build on the
// faster setting, as a user would.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "apps/paisoar-core/commands.h"
#include "bench/child_process.h"
#include "bench/measure_pair.h"

namespace paisoar::app {
namespace {

using nlohmann::json;

struct LadderOptions {
  int64_t steps = 40;
  int repeats = 2;
  std::string json = "ladder_bench.json";
};

struct Rung {
  std::string name;
  int nproc = 1;
  std::map<std::string, std::string> sets;  // on top of the previous rung's (if kept)
};

// The Trainer's "done: N steps in X s, Y samples/s" line, from rank 0.
double samples_per_s(const std::string& out) {
  const auto done = out.rfind("done: ");
  const auto at = done == std::string::npos ? done : out.find(" s, ", done);
  if (at == std::string::npos) throw std::runtime_error("no summary line in: " + out.substr(0, 2000));
  return std::stod(out.substr(at + 4));
}

double run_rung(const LadderOptions& o, const Rung& rung, const std::map<std::string, std::string>& sets) {
  std::vector<std::string> cmd = {self_executable(), "train"};
  for (const auto& [key, value] : sets) {
    cmd.push_back("--set");
    cmd.push_back(key + "=" + value);
  }
  auto child = bench::run_child(launch_argv(rung.nproc, cmd));
  if (!child.status.success()) {
    throw std::runtime_error("rung '" + rung.name + "' " + child.status.describe() + ": " +
                             child.err.substr(child.err.size() > 2000 ? child.err.size() - 2000 : 0));
  }
  return samples_per_s(child.out);
}

int run_ladder(const LadderOptions& o) {
  const std::string run_dir = "/tmp/paisoar_ladder_" + std::to_string(::getpid());
  std::map<std::string, std::string> base = {
      {"model.name", "fashion_cnn"},        {"data.augment", "true"},
      {"data.train_limit", "0"},            {"data.eval_limit", "500"},
      {"train.batch_size", "128"},          {"train.max_steps", std::to_string(o.steps)},
      {"train.log_every", "100000"},        {"schedule.warmup_steps", "5"},
      {"profiler.enabled", "false"},        {"checkpoint.resume", "false"},
      {"checkpoint.dir", run_dir + "/ckpt"}, {"run_dir", run_dir},
      {"amp.dtype", "fp32"},                {"data.workers", "0"},
      {"distributed.overlap", "false"},     {"distributed.compression", "none"}};
  const std::vector<Rung> rungs = {
      {"naive: 1 process, fp32, loading in the training thread", 1, {}},
      {"+ data pipeline (2 prefetching loader threads)", 1, {{"data.workers", "2"}}},
      {"+ bf16 autocast", 1, {{"amp.dtype", "bf16"}}},
      {"+ 2 ranks, DDP (1 loader thread each)", 2, {{"data.workers", "1"}}},
      {"+ overlap and fp16 gradient compression", 2,
       {{"distributed.overlap", "true"}, {"distributed.compression", "fp16"}}},
  };
  std::printf("paisoar bench ladder: FashionCnn, Fashion-MNIST with RandomAffine, global batch 128, "
              "%lld steps per run, median of %d runs\n",
              static_cast<long long>(o.steps), o.repeats);
  std::printf("%-58s %12s %8s %s\n", "rung", "samples/s", "factor", "");
  json out = {{"steps", o.steps}, {"repeats", o.repeats}, {"rungs", json::array()}};
  std::map<std::string, std::string> kept = base;
  double first = 0, previous = 0;
  int kept_nproc = 1;
  for (const auto& rung : rungs) {
    auto trial = kept;
    for (const auto& [k, v] : rung.sets) trial[k] = v;
    Rung effective = rung;
    effective.nproc = std::max(rung.nproc, kept_nproc);
    std::vector<double> rates;
    for (int r = 0; r < o.repeats; ++r) rates.push_back(run_rung(o, effective, trial));
    const double rate = bench::median(rates);
    const double factor = previous > 0 ? rate / previous : 1.0;
    const bool keep = previous == 0 || rate >= previous;
    if (keep) {
      kept = trial;
      kept_nproc = effective.nproc;
      if (first == 0) first = rate;
      previous = rate;
    }
    std::printf("%-58s %12.0f %7.2fx %s\n", rung.name.c_str(), rate, factor,
                keep ? "" : "(slower here: not kept)");
    std::fflush(stdout);
    out["rungs"].push_back({{"rung", rung.name}, {"samples_per_s", rates}, {"median", rate},
                            {"factor", factor}, {"kept", keep}, {"nproc", effective.nproc}});
  }
  std::printf("product of the kept rungs: %.2fx (%.0f -> %.0f samples/s)\n", previous / first, first,
              previous);
  out["product"] = previous / first;
  std::ofstream(o.json) << out.dump(2) << "\n";
  std::printf("wrote %s\n", o.json.c_str());
  std::system(("rm -rf '" + run_dir + "'").c_str());
  return 0;
}

}  // namespace

Command add_bench_ladder_command(CLI::App& bench) {
  auto o = std::make_shared<LadderOptions>();
  auto* cmd = bench.add_subcommand("ladder", "the speed-up ladder: naive -> data pipeline -> bf16 -> DDP -> compression");
  cmd->add_option("--steps", o->steps, "training steps per run")->check(CLI::Range(5, 100000));
  cmd->add_option("--repeats", o->repeats, "runs per rung (median kept)")->check(CLI::Range(1, 20));
  cmd->add_option("--json", o->json, "where to write the results");
  return [o](int, char**) { return run_ladder(*o); };
}

}  // namespace paisoar::app
