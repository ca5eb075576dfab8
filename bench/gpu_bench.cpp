// `paisoar bench gpu`: one ResNet-50 training step on a GPU in fp32, TF32, bf16
// autocast, fp16 autocast with the GradScaler, and bf16 in channels_last, ours
// (models::resnet50 with amp::autocast and amp::GradScaler) next to PyTorch
// eager (bench/gpu_step_peer.py: torchvision's resnet50) in the same run, plus
// the bf16 step wrapped in DDP on one rank against PyTorch DDP over NCCL, and
// optionally torch.compile. --device cpu rehearses the whole run on a CPU.
#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "apps/paisoar-core/commands.h"
#include "bench/child_process.h"
#include "bench/python_peer.h"
#include "paisoar/amp.h"
#include "paisoar/comm.h"
#include "paisoar/ddp.h"
#include "paisoar/models.h"

namespace paisoar::app {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct GpuBenchOptions {
  std::string device = "cuda";
  int64_t batch = 64;
  int64_t size = 224;
  int warmup = 5;
  int iters = 20;
  bool compile = true;  // also time torch.compile on the bf16 step
  std::vector<std::string> variants = {"fp32", "tf32", "bf16", "fp16", "bf16_channels_last"};
  std::string peer_script;
  std::string json = "gpu_bench.json";
};

struct Variant {
  bool tf32 = false;
  std::optional<c10::ScalarType> autocast;
  bool scaler = false;
  bool channels_last = false;
};

Variant variant_of(const std::string& name) {
  if (name == "fp32") return {};
  if (name == "tf32") return {true, std::nullopt, false, false};
  if (name == "bf16") return {false, c10::ScalarType::BFloat16, false, false};
  if (name == "fp16") return {false, c10::ScalarType::Half, true, false};
  if (name == "bf16_channels_last") return {false, c10::ScalarType::BFloat16, false, true};
  throw std::invalid_argument("bench gpu: unknown variant '" + name +
                              "': use fp32, tf32, bf16, fp16, bf16_channels_last");
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

// Our step, timed: ms per step and the first loss.
std::pair<double, double> time_ours(const GpuBenchOptions& o, const Variant& v, const torch::Device& device,
                                    bool ddp) {
  at::globalContext().setAllowTF32CuBLAS(v.tf32);
  at::globalContext().setAllowTF32CuDNN(v.tf32);
  at::globalContext().setBenchmarkCuDNN(true);
  torch::manual_seed(0);
  auto model = models::resnet50(1000);
  model->to(device);
  auto x = torch::randn({o.batch, 3, o.size, o.size}, device);
  auto y = torch::randint(1000, {o.batch}, torch::TensorOptions(device).dtype(torch::kLong));
  if (v.channels_last) {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) {
      if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
    }
    x = x.contiguous(at::MemoryFormat::ChannelsLast);
  }
  std::optional<DistributedDataParallel<models::ResNet>> wrapped;
  if (ddp) wrapped.emplace(model, comm::Communicator::create(comm::Store::hash(), 0, 1));
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  amp::GradScalerOptions so;
  so.enabled = v.scaler;
  amp::GradScaler scaler(so);
  amp::AutocastOptions ao;
  ao.device = device.type();
  ao.enabled = v.autocast.has_value();
  ao.dtype = v.autocast.value_or(c10::ScalarType::BFloat16);
  auto step = [&] {
    opt.zero_grad();
    torch::Tensor loss;
    {
      amp::autocast guard(ao);
      loss = torch::cross_entropy_loss(wrapped ? (*wrapped)(x) : model->forward(x), y);
    }
    scaler.scale(loss).backward();
    scaler.step(opt);
    scaler.update();
    return loss;
  };
  const double first = step().item<double>();
  for (int i = 1; i < o.warmup; ++i) step();
  synchronize(device);
  const auto t0 = Clock::now();
  for (int i = 0; i < o.iters; ++i) step();
  synchronize(device);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / o.iters;
  return {ms, first};
}

json run_peer(const bench::PythonPeer& peer, const GpuBenchOptions& o, const std::string& variant,
              bool ddp, bool compile) {
  std::vector<std::string> argv = {peer.python, peer.script, "--variant", variant,
                                   "--device", o.device, "--batch", std::to_string(o.batch),
                                   "--size", std::to_string(o.size), "--warmup", std::to_string(o.warmup),
                                   "--iters", std::to_string(o.iters)};
  if (ddp) argv.push_back("--ddp");
  if (compile) argv.push_back("--compile");
  auto child = bench::run_child(argv);
  if (!child.status.success()) {
    throw std::runtime_error("bench gpu: the PyTorch peer (" + variant + ") " + child.status.describe() +
                             "; its stderr ends with: " +
                             child.err.substr(child.err.size() > 3000 ? child.err.size() - 3000 : 0));
  }
  return json::parse(bench::last_line(child.out));
}

int run_gpu_bench(const GpuBenchOptions& o) {
  const torch::Device device(o.device);
  if (device.is_cuda() && !torch::cuda::is_available()) {
    throw std::runtime_error("bench gpu: no CUDA device is visible; run it on a GPU machine "
                             "(scripts/gpu_check.sh) or rehearse it with --device cpu");
  }
  const auto peer = bench::find_python_peer("gpu_step_peer.py", o.peer_script);
  if (!peer.ok()) throw std::runtime_error("bench gpu: " + peer.missing);
  std::printf("paisoar bench gpu: ResNet-50, batch %lld at %lldx%lld on %s (LibTorch %s; peer torch %s), "
              "%d warm-up + %d timed steps\n",
              static_cast<long long>(o.batch), static_cast<long long>(o.size), static_cast<long long>(o.size),
              device.str().c_str(), TORCH_VERSION, peer.torch_version.c_str(), o.warmup, o.iters);
  std::printf("%-22s %12s %12s %8s %12s\n", "step", "paisoar ms", "pytorch ms", "ratio", "first losses");
  json rows = json::array();
  auto row = [&](const std::string& name, const std::string& variant, bool ddp, bool compile) {
    const auto [ours_ms, ours_loss] = time_ours(o, variant_of(variant), device, ddp);
    const json p = run_peer(peer, o, variant, ddp, compile);
    const double peer_ms = p.at("ms_per_step");
    std::printf("%-22s %12.2f %12.2f %8.2f %6.3f/%.3f\n", name.c_str(), ours_ms, peer_ms, peer_ms / ours_ms,
                ours_loss, p.at("first_loss").get<double>());
    std::fflush(stdout);
    rows.push_back({{"step", name}, {"paisoar_ms", ours_ms}, {"pytorch_ms", peer_ms},
                    {"speedup", peer_ms / ours_ms}, {"paisoar_first_loss", ours_loss},
                    {"pytorch_first_loss", p.at("first_loss")}, {"pytorch_compile_s", p.at("compile_s")}});
  };
  for (const auto& v : o.variants) row(v, v, false, false);
  row("bf16 + ddp (1 rank)", "bf16", true, false);
  if (o.compile) row("bf16 vs torch.compile", "bf16", false, true);
  json out = {{"device", device.str()}, {"batch", o.batch}, {"size", o.size}, {"libtorch", TORCH_VERSION},
              {"peer_torch", peer.torch_version}, {"rows", rows}};
  std::ofstream(o.json) << out.dump(2) << "\n";
  std::printf("wrote %s (ratio > 1: paisoar's step is faster)\n", o.json.c_str());
  return 0;
}

}  // namespace

Command add_bench_gpu_command(CLI::App& bench) {
  auto o = std::make_shared<GpuBenchOptions>();
  auto* cmd = bench.add_subcommand("gpu", "ResNet-50 training step on a GPU (fp32/TF32/bf16/fp16/channels_last) vs PyTorch");
  cmd->add_option("--device", o->device, "cuda (default) or cpu (a rehearsal)");
  cmd->add_option("--batch", o->batch, "images per step")->check(CLI::Range(1, 4096));
  cmd->add_option("--size", o->size, "image side")->check(CLI::Range(32, 1024));
  cmd->add_option("--warmup", o->warmup, "untimed steps")->check(CLI::Range(1, 1000));
  cmd->add_option("--iters", o->iters, "timed steps")->check(CLI::Range(1, 100000));
  cmd->add_option("--variants", o->variants, "fp32, tf32, bf16, fp16, bf16_channels_last")->delimiter(',');
  cmd->add_flag("--compile,!--no-compile", o->compile, "also time torch.compile on the bf16 step");
  cmd->add_option("--peer-script", o->peer_script, "the PyTorch peer (default: bench/gpu_step_peer.py)");
  cmd->add_option("--json", o->json, "where to write the results");
  return [o](int, char**) { return run_gpu_bench(*o); };
}

}  // namespace paisoar::app
