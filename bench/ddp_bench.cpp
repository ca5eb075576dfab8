// `paisoar bench ddp`: our DDP against the naive C++ loop, against itself
// without overlap, against PyTorch's DistributedDataParallel (Python, Gloo),
// with each compression hook, and 2-rank vs 1-rank throughput, for the small
// Fashion-MNIST CNN and ResNet-18, all in one run. Our variants run on what
// Backend::Auto chooses (shared memory on one host); "ddp on gloo" is ours
// again with PAISOAR_COMM_BACKEND=gloo. Each configuration runs in
// fresh processes under `paisoar launch`; ours and PyTorch's take turns, round
// after round, and the medians over rounds are reported.
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "apps/paisoar-core/commands.h"
#include "bench/child_process.h"
#include "bench/measure_pair.h"
#include "bench/python_peer.h"

namespace paisoar::app {
namespace {

struct DdpBenchOptions {
  std::vector<std::string> models = {"cnn", "resnet18"};
  std::string precision = "bf16";
  int nproc = 2, threads = 1, rounds = 3, repeats = 3, warmup = 3;
  int cnn_steps = 20, resnet_steps = 4;
  int64_t cnn_batch = 64, resnet_batch = 16;  // per rank
  std::string json = "ddp_bench.json";
  std::string peer_script;
};

const std::vector<std::string> kOurVariants = {"ddp",  "no-overlap", "naive",   "fp16",
                                               "bf16", "int8",       "powersgd"};

// Runs argv (which must write JSON to its --out file) and returns its "variants".
nlohmann::json run(std::vector<std::string> argv, const std::string& who) {
  return bench::run_json_child(std::move(argv), who)["variants"];
}

std::vector<std::string> launched(const DdpBenchOptions&, int nproc, std::vector<std::string> cmd) {
  return launch_argv(nproc, cmd);
}

std::vector<std::string> common_args(const DdpBenchOptions& o, const std::string& model) {
  const bool cnn = model == "cnn";
  return {"--model",   model,
          "--precision", o.precision,
          "--batch",   std::to_string(cnn ? o.cnn_batch : o.resnet_batch),
          "--steps",   std::to_string(cnn ? o.cnn_steps : o.resnet_steps),
          "--warmup",  std::to_string(o.warmup),
          "--repeats", std::to_string(o.repeats),
          "--threads", std::to_string(o.threads)};
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

// step_ms samples per variant, gathered over rounds.
using Samples = std::map<std::string, std::vector<double>>;

void collect(const nlohmann::json& variants, const std::string& suffix, Samples& samples,
             nlohmann::json& last) {
  for (auto& [name, v] : variants.items()) {
    samples[name + suffix].push_back(v["step_ms"].get<double>());
    last[name + suffix] = v;
  }
}

nlohmann::json bench_model(const DdpBenchOptions& o, const std::string& model,
                           const bench::PythonPeer& peer) {
  const std::string self = self_executable();
  auto args = common_args(o, model);
  auto worker = [&](std::vector<std::string> variants) {
    std::vector<std::string> cmd = {self, "bench", "ddp-worker", "--variants", join(variants)};
    cmd.insert(cmd.end(), args.begin(), args.end());
    return cmd;
  };
  auto python = [&](bool local) {
    // Launched: the launcher runs *.py under $PAISOAR_PYTHON; alone: say which Python.
    std::vector<std::string> cmd = {peer.script};
    if (local) cmd.insert(cmd.begin(), peer.python);
    cmd.insert(cmd.end(), args.begin(), args.end());
    if (local) cmd.push_back("--local");
    return cmd;
  };
  Samples samples;
  nlohmann::json last;
  const std::string n = "@" + std::to_string(o.nproc);
  for (int r = 0; r < o.rounds; ++r) {
    std::printf("  %s round %d/%d\n", model.c_str(), r + 1, o.rounds);
    std::fflush(stdout);
    collect(run(launched(o, o.nproc, worker(kOurVariants)), "our " + model + " workers"), n,
            samples, last);
    collect(run(worker({"local"}), "our 1-rank " + model + " worker"), "@1", samples, last);
    // Ours again with Gloo carrying the gradients (the default before shared
    // memory), to show what the backend alone changes.
    {
      const char* before = std::getenv("PAISOAR_COMM_BACKEND");
      const std::string saved = before ? before : "";
      ::setenv("PAISOAR_COMM_BACKEND", "gloo", 1);
      const nlohmann::json on_gloo = run(launched(o, o.nproc, worker({"ddp"})), "our " + model + " workers on Gloo");
      if (before) ::setenv("PAISOAR_COMM_BACKEND", saved.c_str(), 1);
      else ::unsetenv("PAISOAR_COMM_BACKEND");
      collect({{"ddp-gloo", on_gloo["ddp"]}}, n, samples, last);
    }
    if (peer.ok()) {
      collect(run(launched(o, o.nproc, python(false)), "PyTorch DDP " + model), n, samples, last);
      collect(run(python(true), "PyTorch 1-rank " + model), "@1", samples, last);
    }
  }
  nlohmann::json rows = nlohmann::json::object();
  for (auto& [name, values] : samples) {
    rows[name] = last[name];
    rows[name]["step_ms"] = bench::median(values);
  }
  return rows;
}

void print_model(const std::string& model, const nlohmann::json& rows, const DdpBenchOptions& o) {
  const std::string n = "@" + std::to_string(o.nproc);
  auto ms = [&](const std::string& key) {
    return rows.contains(key) ? rows[key]["step_ms"].get<double>() : 0.0;
  };
  const double naive = ms("naive" + n), ddp = ms("ddp" + n), torch_ddp = ms("torch_ddp" + n);
  const double none_bytes = rows["ddp" + n]["bytes_per_step"].get<double>();
  std::printf("\n%s, %s, %d ranks x %d thread(s):\n", model.c_str(), o.precision.c_str(), o.nproc,
              o.threads);
  std::printf("  %-12s %9s %9s %11s %12s %9s %12s\n", "variant", "step ms", "vs naive",
              "vs torch", "exposed ms", "MB/step", "bytes cut");
  for (const auto& v : kOurVariants) {
    const auto& row = rows["" + v + n];
    const double bytes = row["bytes_per_step"].get<double>();
    std::printf("  %-12s %9.2f %8.2fx %10s %12.2f %9.2f %11s\n", v.c_str(), ms(v + n),
                naive / ms(v + n),
                torch_ddp > 0 ? (std::to_string(ms(v + n) / torch_ddp).substr(0, 4) + "x").c_str() : "-",
                row["exposed_comm_ms"].get<double>(), bytes / 1e6,
                bytes > 0 && v != "naive"
                    ? (std::to_string(none_bytes / bytes).substr(0, 5) + "x").c_str()
                    : "-");
  }
  if (rows.contains("ddp-gloo" + n)) {
    std::printf("  %-12s %9.2f %8.2fx %10s %12.2f\n", "ddp on gloo", ms("ddp-gloo" + n), naive / ms("ddp-gloo" + n),
                torch_ddp > 0 ? (std::to_string(ms("ddp-gloo" + n) / torch_ddp).substr(0, 4) + "x").c_str() : "-",
                rows["ddp-gloo" + n]["exposed_comm_ms"].get<double>());
  }
  if (torch_ddp > 0) std::printf("  %-12s %9.2f\n", "torch DDP", torch_ddp);
  const double ours_eff = ms("local@1") / ddp;
  std::printf("  scaling efficiency (1-rank step / %d-rank step, same per-rank batch): ours %.3f",
              o.nproc, ours_eff);
  if (torch_ddp > 0) std::printf(", PyTorch %.3f", ms("local@1") > 0 ? ms("local@1") / torch_ddp : 0.0);
  std::printf("\n");
}

int run_bench(const DdpBenchOptions& o) {
  auto peer = bench::find_python_peer("ddp_peer.py", o.peer_script);
  if (!peer.ok()) std::printf("PyTorch peer unavailable (%s): ours only\n", peer.missing.c_str());
  // The launcher runs *.py programs under $PAISOAR_PYTHON.
  else ::setenv("PAISOAR_PYTHON", peer.python.c_str(), 1);
  nlohmann::json out = {{"nproc", o.nproc}, {"threads_per_rank", o.threads},
                        {"precision", o.precision}, {"torch_python", peer.torch_version},
                        {"models", nlohmann::json::object()}};
  for (const auto& model : o.models) out["models"][model] = bench_model(o, model, peer);
  for (const auto& model : o.models) print_model(model, out["models"][model], o);
  std::ofstream(o.json) << out.dump(2) << "\n";
  std::printf("wrote %s\n", o.json.c_str());
  return 0;
}

}  // namespace

Command add_bench_ddp_command(CLI::App& bench) {
  auto o = std::make_shared<DdpBenchOptions>();
  auto* cmd = bench.add_subcommand(
      "ddp", "DDP vs the naive loop, no overlap and PyTorch DDP; compression hooks; scaling");
  cmd->add_option("--models", o->models, "cnn and/or resnet18")->delimiter(',');
  cmd->add_option("--precision", o->precision, "bf16 (autocast) or fp32")
      ->check(CLI::IsMember({"bf16", "fp32"}));
  cmd->add_option("--nproc", o->nproc, "ranks (processes) on this machine");
  cmd->add_option("--threads", o->threads, "intra-op threads per rank");
  cmd->add_option("--rounds", o->rounds, "times each configuration is launched, alternating");
  cmd->add_option("--repeats", o->repeats, "timed samples per launch (median taken)");
  cmd->add_option("--cnn-steps", o->cnn_steps, "steps per sample for the CNN");
  cmd->add_option("--resnet-steps", o->resnet_steps, "steps per sample for ResNet-18");
  cmd->add_option("--cnn-batch", o->cnn_batch, "CNN batch per rank (1x28x28)");
  cmd->add_option("--resnet-batch", o->resnet_batch, "ResNet-18 batch per rank (3x64x64)");
  cmd->add_option("--json", o->json, "where to write the results");
  cmd->add_option("--peer-script", o->peer_script, "the PyTorch peer (default: bench/ddp_peer.py)");
  return [o](int, char**) { return run_bench(*o); };
}

}  // namespace paisoar::app
