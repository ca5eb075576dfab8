// The C++ side of one `paisoar bench amp` run: paisoar's models under
// paisoar's autocast guard, timed and measured as bench/amp_peer.py does.
#include <torch/torch.h>

#include <chrono>
#include <stdexcept>

#include "bench/amp_run.h"
#include "bench/proc_status.h"
#include "paisoar/amp/autocast.h"
#include "paisoar/models.h"

namespace paisoar::bench {
namespace {

struct Built {
  torch::nn::AnyModule model;
  int64_t channels, side;
};

Built build(const AmpRun& run) {
  if (run.model == "cnn" || run.model == "cnn_bn") {
    models::FashionCnnOptions o;
    o.batch_norm = run.model == "cnn_bn";
    o.num_classes = run.classes;
    return {torch::nn::AnyModule(models::FashionCnn(o)), 1, 28};
  }
  if (run.model == "resnet18") return {torch::nn::AnyModule(models::resnet18(run.classes)), 3, run.size};
  throw std::invalid_argument("bench amp: unknown model '" + run.model + "'; use cnn, cnn_bn or resnet18");
}

}  // namespace

std::vector<std::string> amp_run_flags(const AmpRun& run) {
  return {"--model",   run.model,
          "--dtype",   run.dtype,
          "--batch",   std::to_string(run.batch),
          "--size",    std::to_string(run.size),
          "--classes", std::to_string(run.classes),
          "--threads", std::to_string(run.threads),
          "--warmup",  std::to_string(run.warmup),
          "--iters",   std::to_string(run.iters),
          "--seconds", std::to_string(run.seconds)};
}

nlohmann::json run_amp_worker(const AmpRun& run) {
  if (run.dtype != "fp32" && run.dtype != "bf16") {
    throw std::invalid_argument("bench amp: unknown dtype '" + run.dtype + "'; use fp32 or bf16");
  }
  torch::set_num_threads(run.threads);
  torch::manual_seed(0);
  auto [model, channels, side] = build(run);
  auto module = model.ptr();
  module->train();
  auto x = torch::randn({run.batch, channels, side, side});
  auto y = torch::randint(0, run.classes, {run.batch}, torch::kLong);
  torch::optim::SGD opt(module->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  const int64_t rss_base = proc_status_kib("VmRSS");
  const bool peak_reset = reset_peak_rss();

  amp::AutocastOptions autocast_options;
  autocast_options.enabled = run.dtype == "bf16";
  std::vector<double> losses;
  auto step = [&] {
    auto start = std::chrono::steady_clock::now();
    opt.zero_grad();
    torch::Tensor loss;
    {
      amp::autocast guard(autocast_options);
      loss = torch::nn::functional::cross_entropy(model.forward(x), y);
    }
    loss.backward();
    opt.step();
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    losses.push_back(loss.item<double>());
    return elapsed;
  };
  for (int i = 0; i < run.warmup; ++i) step();
  std::vector<double> steps;
  double timed = 0;
  while (static_cast<int>(steps.size()) < run.iters || timed < run.seconds) {
    steps.push_back(step());
    timed += steps.back();
  }
  int64_t params = 0;
  for (const auto& p : module->parameters()) params += p.numel();
  return {{"impl", "paisoar"},
          {"threads", torch::get_num_threads()},
          {"params", params},
          {"step_s", steps},
          {"losses", losses},
          {"rss_base_kib", rss_base},
          {"peak_rss_kib", proc_status_kib("VmHWM")},
          {"peak_reset", peak_reset}};
}

}  // namespace paisoar::bench
