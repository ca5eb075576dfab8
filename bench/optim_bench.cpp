// `paisoar bench optim`: optimizer step time, per-tensor (torch::optim::SGD and
// AdamW, paisoar LARS and LAMB) next to FlatOptimizer on the same model, for a
// deep model of many small tensors and a wide one of few large tensors, and
// PyTorch's own torch.optim with foreach=True and fused=True
// (bench/optim_peer.py) for SGD and AdamW, which it has.
#include <torch/torch.h>

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "apps/paisoar-core/commands.h"
#include "bench/child_process.h"
#include "bench/measure_pair.h"
#include "bench/python_peer.h"
#include "paisoar/optim.h"

namespace paisoar::app {
namespace {

using optim::FlatAlgorithm;
using optim::FlatOptimizerOptions;

struct OptimBenchOptions {
  int repeats = 7;
  int iters = 20;  // steps per sample
  std::string json = "optim_bench.json";
  std::string peer_script;
};

// torch.optim's step times for one shape (bench/optim_peer.py), or null.
nlohmann::json peer_times(const bench::PythonPeer& peer, int layers, int width, const OptimBenchOptions& o) {
  if (!peer.ok()) return nullptr;
  auto child = bench::run_child({peer.python, peer.script, "--layers", std::to_string(layers), "--width",
                                 std::to_string(width), "--iters", std::to_string(o.iters), "--repeats",
                                 std::to_string(o.repeats), "--threads", std::to_string(torch::get_num_threads())});
  if (!child.status.success()) {
    throw std::runtime_error("optim_peer.py " + child.status.describe() + ": " +
                             child.err.substr(child.err.size() > 2000 ? child.err.size() - 2000 : 0));
  }
  return nlohmann::json::parse(bench::last_line(child.out));
}

// Linear layers' weights and biases, with gradients set once.
std::vector<torch::Tensor> make_model(int layers, int width) {
  torch::manual_seed(0);
  std::vector<torch::Tensor> ps;
  for (int l = 0; l < layers; ++l) {
    ps.push_back(torch::randn({width, width}) * 0.05);
    ps.push_back(torch::zeros({width}));
  }
  for (auto& p : ps) {
    p.requires_grad_();
    p.mutable_grad() = torch::randn_like(p) * 1e-3;
  }
  return ps;
}

std::unique_ptr<torch::optim::Optimizer> per_tensor(FlatAlgorithm a, std::vector<torch::Tensor> ps) {
  switch (a) {
    case FlatAlgorithm::SGD:
      return std::make_unique<torch::optim::SGD>(ps, torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-4));
    case FlatAlgorithm::AdamW:
      return std::make_unique<torch::optim::AdamW>(ps, torch::optim::AdamWOptions(1e-3).weight_decay(0.01));
    case FlatAlgorithm::LARS:
      return std::make_unique<optim::LARS>(ps, optim::LARSOptions(0.1).weight_decay(1e-4));
    case FlatAlgorithm::LAMB:
      return std::make_unique<optim::LAMB>(ps, optim::LAMBOptions(1e-3));
  }
  return nullptr;
}

FlatOptimizerOptions flat_options(FlatAlgorithm a) {
  switch (a) {
    case FlatAlgorithm::SGD: return FlatOptimizerOptions(a, 0.1).momentum(0.9).weight_decay(1e-4);
    case FlatAlgorithm::AdamW: return FlatOptimizerOptions(a, 1e-3).weight_decay(0.01);
    case FlatAlgorithm::LARS: return FlatOptimizerOptions(a, 0.1).weight_decay(1e-4).eps(1e-9);
    case FlatAlgorithm::LAMB: return FlatOptimizerOptions(a, 1e-3).weight_decay(0.01).eps(1e-6);
  }
  return {};
}

const char* name_of(FlatAlgorithm a) {
  switch (a) {
    case FlatAlgorithm::SGD: return "sgd_momentum";
    case FlatAlgorithm::AdamW: return "adamw";
    case FlatAlgorithm::LARS: return "lars";
    case FlatAlgorithm::LAMB: return "lamb";
  }
  return "?";
}

int run_optim_bench(const OptimBenchOptions& o) {
  struct Shape { const char* name; int layers, width; };
  const Shape shapes[] = {{"deep: 64 x Linear(128,128), 128 tensors", 64, 128},
                          {"wide: 8 x Linear(1024,1024), 16 tensors", 8, 1024}};
  const auto peer = bench::find_python_peer("optim_peer.py", o.peer_script);
  if (!peer.ok()) std::fprintf(stderr, "paisoar bench optim: no PyTorch peer: %s\n", peer.missing.c_str());
  nlohmann::json out = {{"threads", torch::get_num_threads()}, {"rows", nlohmann::json::array()}};
  std::printf("paisoar bench optim: step time in ms, median of %d samples of %d steps, %d threads; "
              "torch.optim (Python %s) foreach and fused\n",
              o.repeats, o.iters, torch::get_num_threads(), peer.torch_version.c_str());
  std::printf("%-42s %-13s %10s %10s %8s %9s %9s %10s\n", "model", "optimizer", "per-tensor", "flat",
              "speedup", "foreach", "fused", "vs fused");
  for (const auto& shape : shapes) {
    const nlohmann::json py = peer_times(peer, shape.layers, shape.width, o);
    for (auto algo : {FlatAlgorithm::SGD, FlatAlgorithm::AdamW, FlatAlgorithm::LARS, FlatAlgorithm::LAMB}) {
      auto ref = per_tensor(algo, make_model(shape.layers, shape.width));
      auto flat_params = make_model(shape.layers, shape.width);
      optim::FlatOptimizer flat(flat_params, flat_options(algo));
      auto ref_step = [&] { ref->step(); };
      auto flat_step = [&] { flat.step(); };
      auto [ref_s, flat_s] = bench::measure_pair(o.iters, o.repeats, ref_step, flat_step, [] {});
      double ref_ms = ref_s * 1e3, flat_ms = flat_s * 1e3;
      nlohmann::json row = {{"model", shape.name}, {"optimizer", name_of(algo)},
                            {"per_tensor_ms", ref_ms}, {"flat_ms", flat_ms}, {"speedup", ref_ms / flat_ms}};
      char foreach[16] = "-", fused[16] = "-", vs_fused[16] = "-";
      if (!py.is_null() && py.contains(name_of(algo))) {
        const double fe = py[name_of(algo)]["foreach_ms"], fu = py[name_of(algo)]["fused_ms"];
        std::snprintf(foreach, sizeof(foreach), "%.3f", fe);
        std::snprintf(fused, sizeof(fused), "%.3f", fu);
        std::snprintf(vs_fused, sizeof(vs_fused), "%.2f", fu / flat_ms);
        row["torch_optim_foreach_ms"] = fe;
        row["torch_optim_fused_ms"] = fu;
        row["speedup_vs_fused"] = fu / flat_ms;
      }
      std::printf("%-42s %-13s %10.3f %10.3f %8.2f %9s %9s %10s\n", shape.name, name_of(algo), ref_ms, flat_ms,
                  ref_ms / flat_ms, foreach, fused, vs_fused);
      out["rows"].push_back(row);
    }
  }
  std::ofstream(o.json) << out.dump(2) << "\n";
  std::printf("wrote %s\n", o.json.c_str());
  return 0;
}

}  // namespace

Command add_bench_optim_command(CLI::App& bench) {
  auto o = std::make_shared<OptimBenchOptions>();
  auto* cmd = bench.add_subcommand("optim", "optimizer step: per-tensor vs flat buffers");
  cmd->add_option("--repeats", o->repeats, "samples (median kept)")->check(CLI::Range(1, 1000));
  cmd->add_option("--iters", o->iters, "steps per sample")->check(CLI::Range(1, 100000));
  cmd->add_option("--json", o->json, "where to write the results");
  cmd->add_option("--peer-script", o->peer_script, "the torch.optim peer (default: bench/optim_peer.py)");
  return [o](int, char**) { return run_optim_bench(*o); };
}

}  // namespace paisoar::app
