// The memory prediction: the step measured with autograd::grad over the
// trainable parameters (their gradients are returned and dropped, so no
// .grad is touched and no gradient hook, DDP's included, fires), under a
// PeakMeter; the optimizer's temporaries measured on a copy of the largest
// parameter; the rest counted from the model's storages and the optimizer's
// known state per parameter.
#include "src/diagnosis/memory_prediction.h"

#include <c10/util/Exception.h>
#include <torch/autograd.h>

#include <cstdio>
#include <sstream>

#include "paisoar/data/data_error.h"
#include "paisoar/memory/device_memory.h"
#include "paisoar/memory/memory_report.h"
#include "paisoar/memory/tracking_allocator.h"
#include "src/config/optimizer_factory.h"
#include "src/diagnosis/probe_guard.h"

namespace paisoar::train {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::vector<torch::Tensor> trainable(const torch::nn::Module& model) {
  std::vector<torch::Tensor> params;
  for (const auto& p : model.parameters()) {
    if (p.requires_grad()) params.push_back(p);
  }
  return params;
}

}  // namespace

std::string mib_text(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", static_cast<double>(bytes) / kMiB);
  return text;
}

double state_per_parameter(const std::string& optimizer, double momentum) {
  if (optimizer == "sgd") return momentum > 0 ? 1 : 0;  // the momentum buffer
  if (optimizer == "lars") return 1;                   // its momentum
  return 2;                                            // adamw, lamb: two moments
}

int64_t measure_step_bytes(torch::nn::Module& model, const ForwardFn& forward, const LossFn& loss_fn,
                           const torch::Tensor& data, const torch::Tensor& labels, const Precision& precision,
                           amp::RegionRunner* recompute, c10::Device device) {
  if (device.is_cpu() && !memory::cpu_tracking_allocator_installed()) return -1;
  const ProbeGuard untouched(model);
  const std::vector<torch::Tensor> params = trainable(model);
  int64_t peak = -1;
  {
    memory::PeakMeter meter(device);
    {
      torch::Tensor loss;
      {
        PrecisionContext context(precision, recompute);
        loss = loss_fn(forward(data), labels);
      }
      if (!params.empty() && loss.requires_grad()) {
        torch::autograd::grad({loss}, params, {}, /*retain_graph=*/false, /*create_graph=*/false,
                              /*allow_unused=*/true);
      }
    }
    peak = meter.peak_above_start();
  }
  return peak;
}

std::pair<torch::Tensor, torch::Tensor> first_samples(const data::Dataset& data, int64_t n, c10::Device device) {
  std::vector<torch::Tensor> inputs, targets;
  std::vector<int64_t> labels;
  std::string first_bad;  // the loader reports bad samples; the probe only leaves them out
  const int64_t classes = data.num_classes();
  for (int64_t i = 0; i < data.size() && static_cast<int64_t>(inputs.size()) < n; ++i) {
    data::SampleRng rng(0, 0, static_cast<uint64_t>(i));
    data::Example e;
    try {
      e = data.get(i, rng);
    } catch (const data::DataError& error) {
      if (first_bad.empty()) first_bad = error.what_without_backtrace();
      continue;
    }
    if (!e.target.defined() && classes > 0 && (e.label < 0 || e.label >= classes)) {
      if (first_bad.empty()) {
        first_bad = data.describe_label(i) + ": label " + std::to_string(e.label) + " is outside [0, " +
                    std::to_string(classes) + ")";
      }
      continue;
    }
    inputs.push_back(e.data);
    if (e.target.defined()) {
      targets.push_back(e.target);
    } else {
      labels.push_back(e.label);
    }
  }
  TORCH_CHECK(!inputs.empty(), "no good sample among the training data's first ones",
              first_bad.empty() ? std::string() : " (the first: " + first_bad + ")");
  const torch::Tensor y = targets.empty() ? torch::tensor(labels, torch::kLong) : torch::stack(targets);
  return {torch::stack(inputs).to(device), y.to(device)};
}

int64_t measure_optimizer_step_bytes(const torch::nn::Module& model, const OptimizerConfig& config,
                                     c10::Device device) {
  if (device.is_cpu() && !memory::cpu_tracking_allocator_installed()) return -1;
  torch::Tensor largest;
  for (const auto& p : trainable(model)) {
    if (!largest.defined() || p.numel() > largest.numel()) largest = p;
  }
  if (!largest.defined()) return 0;
  torch::NoGradGuard no_grad;
  torch::Tensor copy = largest.detach().clone().requires_grad_(true);
  copy.mutable_grad() = torch::full_like(copy, 1e-3);  // not from the global generator: training draws from it
  const auto optimizer = make_optimizer(config, {copy}, 1e-3);
  optimizer->step();  // the first step makes the state
  memory::PeakMeter meter(device);
  optimizer->step();
  return meter.peak_above_start();
}

MemoryPrediction predict_memory(const torch::nn::Module& model, const MemoryLayout& layout, int64_t step_bytes) {
  std::vector<torch::Tensor> held = model.parameters();
  for (const auto& b : model.buffers()) held.push_back(b);
  const int64_t trainable_bytes = memory::storage_bytes(trainable(model));
  using layout::StateKind;
  MemoryPrediction p;
  p.parameters = memory::storage_bytes(held);
  p.gradients = trainable_bytes / layout.placements.shards(StateKind::Gradients);
  const double state = state_per_parameter(layout.optimizer, layout.momentum) * static_cast<double>(trainable_bytes);
  p.optimizer_state =
      static_cast<int64_t>(state / static_cast<double>(layout.placements.shards(StateKind::OptimizerState)));
  p.step = std::max<int64_t>({0, step_bytes, layout.optimizer_step_bytes});
  return p;
}

std::string describe_prediction(const MemoryPrediction& p, int64_t micro_batch) {
  return mib_text(p.total()) + " MiB (parameters " + mib_text(p.parameters) + ", gradients " + mib_text(p.gradients) +
         ", optimizer state " + mib_text(p.optimizer_state) + ", a step of micro-batch " + std::to_string(micro_batch) +
         " above them " + mib_text(p.step) + ")";
}

int64_t memory_budget_bytes(const MemoryConfig& config, c10::Device device, int64_t ranks_per_node, int64_t held) {
  if (config.budget_mb > 0) return static_cast<int64_t>(config.budget_mb * kMiB);
  const int64_t available = memory::available_bytes(device);
  if (available < 0) return -1;
  // The CPU's memory is shared by the node's ranks; a GPU is one rank's.
  return (device.is_cpu() ? available / std::max<int64_t>(1, ranks_per_node) : available) + held;
}

std::string over_budget_message(int64_t rank, const MemoryPrediction& predicted, int64_t micro_batch, int64_t budget,
                                const std::vector<MemoryFix>& fixes) {
  std::ostringstream out;
  out << "memory: rank " << rank << "'s predicted peak is " << describe_prediction(predicted, micro_batch)
      << ", over its budget of " << mib_text(budget) << " MiB (memory.budget_mb); it would likely run out of memory, so it "
      << "stops before the first step.";
  std::vector<const MemoryFix*> fit;
  for (const auto& f : fixes) {
    if (f.predicted.total() <= budget) fit.push_back(&f);
  }
  if (fit.empty()) {
    out << " None of the changes tried fits";
    for (const auto& f : fixes) out << (&f == &fixes.front() ? " (" : "; ") << f.change << ": " << mib_text(f.predicted.total()) << " MiB";
    out << (fixes.empty() ? "" : ")") << ": use more ranks, a smaller model, or raise memory.budget_mb";
    return out.str();
  }
  out << " Changes that fit, cheapest first:";
  for (const auto* f : fit) out << "\n  " << f->change << "  -> predicted " << describe_prediction(f->predicted, f->micro_batch);
  out << "\n(or raise memory.budget_mb, or set memory.predict: false to train anyway)";
  return out.str();
}

}  // namespace paisoar::train
