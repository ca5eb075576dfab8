// `paisoar bench amp`: training step time and peak memory of the reference
// models (FashionCnn, ResNet-18) in fp32 and under bf16 CPU autocast, ours next
// to the same model in PyTorch (Python). Every run is a fresh process (our
// worker: this program with --worker; the peer: bench/amp_peer.py), so peak
// RSS belongs to one configuration; ours and the peer's runs alternate.
#include <torch/torch.h>
#include <torch/version.h>

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "apps/paisoar-core/commands.h"
#include "bench/amp_run.h"
#include "bench/child_process.h"
#include "bench/python_peer.h"
#include "bench/measure_pair.h"

namespace paisoar::app {
namespace {

using bench::AmpRun;
using nlohmann::json;

struct AmpBenchOptions {
  std::vector<std::string> models = {"cnn", "resnet18"};
  std::vector<std::string> dtypes = {"fp32", "bf16"};
  int64_t cnn_batch = 64;
  int64_t resnet_batch = 32;
  int64_t resnet_size = 64;
  int threads = 0;  // 0: LibTorch's default in this process
  int warmup = 1;
  int iters = 1;
  double seconds = 2.0;
  int repeats = 5;          // runs (processes) per side and configuration
  std::string peer_script;  // "": the installed copy, else the source tree's
  std::string json = "amp_bench.json";
  int compiled_repeats = 2;  // runs of the torch.compile'd peer per configuration (0: none)
  bool worker = false;  // hidden: run one configuration and print its JSON
  AmpRun run;           // the worker's configuration
};

// One run's figures, from the JSON line a worker prints.
struct Sample {
  double step_ms = 0;   // mean over the timed steps
  double peak_mib = 0;  // peak RSS above the RSS once model, batch and optimizer exist
  double first_loss = 0;
  int64_t params = 0;
  int steps = 0;  // timed
  bool peak_reset = false;
};

// Runs one worker (ours or the peer, named `who`), checks it used `threads`
// threads and prints a progress line.
Sample run_worker(const std::vector<std::string>& argv, const std::string& who, int threads) {
  auto child = bench::run_child(argv);
  if (!child.status.success()) {
    throw std::runtime_error(who + " " + child.status.describe() + "; its stderr ends with: " +
                             child.err.substr(child.err.size() > 2000 ? child.err.size() - 2000 : 0));
  }
  json j;
  try {
    j = json::parse(bench::last_line(child.out));
  } catch (const json::exception& e) {
    throw std::runtime_error(who + " printed no result line (" + e.what() + "); stdout: " + child.out);
  }
  Sample s;
  double total = 0;
  for (double t : j.at("step_s")) total += t;
  s.steps = static_cast<int>(j.at("step_s").size());
  s.step_ms = total / s.steps * 1e3;
  s.peak_mib = (j.at("peak_rss_kib").get<double>() - j.at("rss_base_kib").get<double>()) / 1024;
  s.first_loss = j.at("losses").at(0).get<double>();
  s.params = j.at("params");
  s.peak_reset = j.at("peak_reset");
  if (j.at("threads").get<int>() != threads) {
    throw std::runtime_error(who + " ran with " + j.at("threads").dump() + " threads, not " +
                             std::to_string(threads));
  }
  std::fprintf(stderr, "  %-40s %9.1f ms/step (%d steps)  peak +%7.1f MiB%s\n", who.c_str(), s.step_ms,
               s.steps, s.peak_mib, s.peak_reset ? "" : " (VmHWM not reset: includes start-up)");
  return s;
}

struct Row {
  AmpRun run;
  std::vector<Sample> ours, peer;  // peer empty when there is none
  std::vector<Sample> compiled;    // the torch.compile'd peer; empty when not run
};

double median_of(const std::vector<Sample>& samples, double Sample::*field) {
  std::vector<double> v;
  for (const auto& s : samples) v.push_back(s.*field);
  return bench::median(std::move(v));
}

// Whether the first losses agree: the two sides start from the same weights
// and data, so a mismatch means the models differ. bf16 runs the same kernels
// on both sides too, but allow for rounding-order differences.
bool losses_agree(const Row& r) {
  double a = r.ours[0].first_loss, b = r.peer[0].first_loss;
  double tol = r.run.dtype == "bf16" ? 1e-2 : 1e-4;
  return std::abs(a - b) <= tol * std::max(1.0, std::abs(b));
}

std::string format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, value);
  return buf;
}

std::string input_of(const AmpRun& r) {
  int64_t c = r.model == "resnet18" ? 3 : 1;
  return std::to_string(c) + "x" + std::to_string(r.size) + "x" + std::to_string(r.size);
}

void print_and_save(const AmpBenchOptions& o, const bench::PythonPeer& peer, int threads, const std::vector<Row>& rows) {
  const bool has_peer = peer.missing.empty();
  std::printf(
      "\npaisoar bench amp: training step (zero_grad, forward + cross-entropy under autocast, "
      "backward, SGD momentum), synthetic data; %d threads on both sides; median of %d runs "
      "(a fresh process each) of the mean step after %d warmup (at least %d steps and %.1f s)\n",
      threads, o.repeats, o.warmup, o.iters, o.seconds);
  std::printf("peer: %s\n",
              has_peer
                  ? ("PyTorch " + peer.torch_version + " (" + peer.python + " " + peer.script + ")").c_str()
                  : ("none: " + peer.missing).c_str());
  std::printf("%-9s %-8s %5s %-5s %11s %11s %8s %12s %12s %12s  %s\n", "model", "input", "batch", "dtype",
              "paisoar ms", "pytorch ms", "pt/ours", "compiled ms", "paisoar MiB", "pytorch MiB",
              "first loss paisoar/pytorch");
  json out = {{"threads", threads},   {"libtorch", TORCH_VERSION}, {"warmup", o.warmup},   {"iters", o.iters},
              {"seconds", o.seconds}, {"repeats", o.repeats},      {"rows", json::array()}};
  out["peer"] = has_peer ? json{{"python", peer.python}, {"torch", peer.torch_version}}
                         : json{{"missing", peer.missing}};
  for (const auto& r : rows) {
    double ours_ms = median_of(r.ours, &Sample::step_ms), ours_mib = median_of(r.ours, &Sample::peak_mib);
    json row = {{"model", r.run.model},         {"input", input_of(r.run)},
                {"batch", r.run.batch},         {"dtype", r.run.dtype},
                {"params", r.ours[0].params},   {"paisoar_ms", ours_ms},
                {"paisoar_peak_mib", ours_mib}, {"paisoar_first_loss", r.ours[0].first_loss}};
    for (const auto& s : r.ours) row["paisoar_samples_ms"].push_back(s.step_ms);
    std::string peer_ms = "n/a", ratio = "n/a", peer_mib = "n/a",
                losses = format("%.5f", r.ours[0].first_loss);
    if (!r.peer.empty()) {
      double ms = median_of(r.peer, &Sample::step_ms), mib = median_of(r.peer, &Sample::peak_mib);
      peer_ms = format("%.1f", ms);
      ratio = format("%.2f", ms / ours_ms);
      peer_mib = format("%.1f", mib);
      losses +=
          format(" / %.5f", r.peer[0].first_loss) + (losses_agree(r) ? "" : "  MISMATCH: the models differ");
      row.update({{"pytorch_ms", ms},
                  {"pytorch_over_paisoar", ms / ours_ms},
                  {"pytorch_peak_mib", mib},
                  {"pytorch_first_loss", r.peer[0].first_loss},
                  {"first_losses_agree", losses_agree(r)},
                  {"pytorch_params", r.peer[0].params}});
      for (const auto& s : r.peer) row["pytorch_samples_ms"].push_back(s.step_ms);
    }
    std::string compiled_ms = "n/a";
    if (!r.compiled.empty()) {
      const double ms = median_of(r.compiled, &Sample::step_ms);
      compiled_ms = format("%.1f", ms);
      row["pytorch_compiled_ms"] = ms;
      row["pytorch_compiled_over_paisoar"] = ms / ours_ms;
      for (const auto& s : r.compiled) row["pytorch_compiled_samples_ms"].push_back(s.step_ms);
    }
    std::printf("%-9s %-8s %5lld %-5s %11.1f %11s %8s %12s %12.1f %12s  %s\n", r.run.model.c_str(),
                input_of(r.run).c_str(), static_cast<long long>(r.run.batch), r.run.dtype.c_str(), ours_ms,
                peer_ms.c_str(), ratio.c_str(), compiled_ms.c_str(), ours_mib, peer_mib.c_str(), losses.c_str());
    out["rows"].push_back(row);
  }
  // bf16's speedup over fp32, per model and side.
  for (const auto& model : o.models) {
    const Row *f = nullptr, *b = nullptr;
    for (const auto& r : rows) {
      if (r.run.model == model) (r.run.dtype == "fp32" ? f : b) = &r;
    }
    if (f == nullptr || b == nullptr) continue;
    double ours = median_of(f->ours, &Sample::step_ms) / median_of(b->ours, &Sample::step_ms);
    json speedup = {{"model", model}, {"paisoar", ours}};
    std::printf("bf16 speedup over fp32 (fp32 time / bf16 time), %s: paisoar %.2fx", model.c_str(), ours);
    if (!f->peer.empty()) {
      double theirs = median_of(f->peer, &Sample::step_ms) / median_of(b->peer, &Sample::step_ms);
      speedup["pytorch"] = theirs;
      std::printf(", pytorch %.2fx", theirs);
    }
    std::printf("\n");
    out["bf16_speedup"].push_back(speedup);
  }
  std::ofstream(o.json) << out.dump(2) << "\n";
  std::printf("wrote %s\n", o.json.c_str());
}

int run_amp_bench(const AmpBenchOptions& o) {
  const int threads = o.threads > 0 ? o.threads : torch::get_num_threads();
  const bench::PythonPeer peer = bench::find_python_peer("amp_peer.py", o.peer_script);
  if (!peer.missing.empty()) {
    std::fprintf(stderr, "paisoar bench amp: no PyTorch peer: %s. Measuring paisoar only.\n",
                 peer.missing.c_str());
  }
  const std::string self = self_executable();
  std::vector<Row> rows;
  for (const auto& model : o.models) {
    for (const auto& dtype : o.dtypes) {
      Row row;
      row.run.model = model;
      row.run.dtype = dtype;
      const bool resnet = model == "resnet18";
      row.run.batch = resnet ? o.resnet_batch : o.cnn_batch;
      row.run.size = resnet ? o.resnet_size : 28;
      row.run.threads = threads;
      row.run.warmup = o.warmup;
      row.run.iters = o.iters;
      row.run.seconds = o.seconds;
      auto flags = bench::amp_run_flags(row.run);
      std::vector<std::string> ours_argv = {self, "bench", "amp", "--worker"};
      std::vector<std::string> peer_argv = {peer.python, peer.script};
      ours_argv.insert(ours_argv.end(), flags.begin(), flags.end());
      peer_argv.insert(peer_argv.end(), flags.begin(), flags.end());
      const std::string tag = " (" + model + " " + dtype + ")";
      auto ours = [&] { return run_worker(ours_argv, "paisoar worker" + tag, threads); };
      auto theirs = [&] {
        if (!peer.missing.empty()) return std::optional<Sample>();
        return std::optional<Sample>(run_worker(peer_argv, "PyTorch peer" + tag, threads));
      };
      auto [ours_samples, peer_samples] = bench::alternate_pair(o.repeats, ours, theirs);
      row.ours = std::move(ours_samples);
      for (auto& s : peer_samples) {
        if (s) row.peer.push_back(*s);
      }
      // torch.compile'd, what a PyTorch user would try next; its compilation
      // runs in the untimed warm-up.
      if (peer.missing.empty()) {
        std::vector<std::string> compiled_argv = peer_argv;
        compiled_argv.push_back("--compile");
        for (int r = 0; r < o.compiled_repeats; ++r) {
          row.compiled.push_back(run_worker(compiled_argv, "torch.compile peer" + tag, threads));
        }
      }
      rows.push_back(std::move(row));
    }
  }
  print_and_save(o, peer, threads, rows);
  return 0;
}

}  // namespace

Command add_bench_amp_command(CLI::App& bench) {
  auto o = std::make_shared<AmpBenchOptions>();
  auto* cmd = bench.add_subcommand("amp", "training step fp32 vs bf16 autocast: paisoar vs PyTorch (Python)");
  cmd->add_option("--models", o->models, "models: cnn, cnn_bn, resnet18")
      ->delimiter(',')
      ->check(CLI::IsMember({"cnn", "cnn_bn", "resnet18"}));
  cmd->add_option("--dtypes", o->dtypes, "precisions: fp32, bf16")
      ->delimiter(',')
      ->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_option("--cnn-batch", o->cnn_batch, "CNN batch (1x28x28 images)")->check(CLI::Range(1, 65536));
  cmd->add_option("--resnet-batch", o->resnet_batch, "ResNet-18 batch")->check(CLI::Range(1, 65536));
  cmd->add_option("--resnet-size", o->resnet_size, "ResNet-18 image side")->check(CLI::Range(32, 1024));
  cmd->add_option("--threads", o->threads, "intra-op threads on both sides (0: LibTorch's default)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--warmup", o->warmup, "untimed steps per run")->check(CLI::Range(0, 1000));
  cmd->add_option("--iters", o->iters, "timed steps per run, at least")->check(CLI::Range(1, 100000));
  cmd->add_option("--seconds", o->seconds, "time steps until this much has passed (per run)")
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--repeats", o->repeats, "runs per side and configuration (median kept)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--peer-script", o->peer_script, "the PyTorch peer (default: bench/amp_peer.py)");
  cmd->add_option("--compiled-repeats", o->compiled_repeats, "runs of the torch.compile'd peer (0: none)")
      ->check(CLI::Range(0, 100));
  cmd->add_option("--json", o->json, "where to write the results");
  // The worker: one configuration in this process (what the bench runs per run).
  cmd->add_flag("--worker", o->worker)->group("");
  cmd->add_option("--model", o->run.model)->group("");
  cmd->add_option("--dtype", o->run.dtype)->group("");
  cmd->add_option("--batch", o->run.batch)->group("");
  cmd->add_option("--size", o->run.size)->group("");
  cmd->add_option("--classes", o->run.classes)->group("");
  return [o](int, char**) {
    if (!o->worker) return run_amp_bench(*o);
    o->run.threads = o->threads > 0 ? o->threads : torch::get_num_threads();
    o->run.warmup = o->warmup;
    o->run.iters = o->iters;
    o->run.seconds = o->seconds;
    std::printf("%s\n", bench::run_amp_worker(o->run).dump().c_str());
    return 0;
  };
}

}  // namespace paisoar::app
