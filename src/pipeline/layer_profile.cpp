// profile_layers: each layer's forward+backward time (median of repeats) and
// memory (weights, gradients and the bytes a forward keeps for backward) on a
// sample micro-batch, leaving the model's gradients and buffers as they were.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>

#include "paisoar/memory/device_memory.h"
#include "paisoar/error.h"
#include "paisoar/memory/tracking_allocator.h"
#include "paisoar/pipeline/layer_cost.h"

namespace paisoar::pipeline {
namespace {

// "torch::nn::LinearImpl" -> "Linear".
std::string short_name(const std::string& full) {
  std::string name = full.substr(full.rfind(':') == std::string::npos ? 0 : full.rfind(':') + 1);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0) name.resize(name.size() - 4);
  return name;
}

void synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

// Live bytes on `device`, or -1 where they are not counted.
int64_t live_bytes(const torch::Device& device) {
  try {
    return memory::device_memory(device).current_bytes;
  } catch (const c10::Error&) {
    return -1;
  }
}

// Restores gradients and buffers (BatchNorm statistics) when profiling ends.
class StateRestore {
 public:
  explicit StateRestore(const torch::nn::Module& model) {
    for (auto& p : model.parameters()) {
      params_.push_back(p);
      grads_.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
    }
    for (auto& b : model.buffers()) {
      buffers_.push_back(b);
      buffer_values_.push_back(b.clone());
    }
  }
  ~StateRestore() {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < params_.size(); ++i) params_[i].mutable_grad() = grads_[i];
    for (size_t i = 0; i < buffers_.size(); ++i) buffers_[i].copy_(buffer_values_[i]);
  }

 private:
  std::vector<torch::Tensor> params_, grads_, buffers_, buffer_values_;
};

}  // namespace

std::vector<LayerCost> profile_layers(const torch::nn::Sequential& model, const torch::Tensor& sample,
                                      const ProfileOptions& options) {
  return profile_layers(models::LayerSequence::of_sequential(model), sample, options);
}

std::vector<LayerCost> profile_layers(const models::LayerSequence& model, const torch::Tensor& sample,
                                      const ProfileOptions& options) {
  TORCH_CHECK(sample.defined(), "profile_layers: the sample batch is undefined");
  TORCH_CHECK(options.repeats >= 1 && options.warmup >= 0 && options.activation_copies >= 0,
              "profile_layers: need repeats >= 1, warmup >= 0 and activation_copies >= 0");
  const torch::Device device = sample.device();
  if (device.is_cpu()) {
    try {
      memory::install_cpu_tracking_allocator();
    } catch (const c10::Error&) {
      // another allocator owns the CPU: fall back to the output-size estimate below
    }
  }
  const models::LayerRange all = model.part(0, model.size());
  StateRestore restore(*all);
  std::vector<LayerCost> costs;
  torch::Tensor x = sample.detach();
  for (size_t i = 0; i < model.size(); ++i) {
    const models::Layer& layer = model.layer(i);
    LayerCost cost;
    cost.name = layer.name;
    if (layer.modules.size() == 1) {
      cost.name += ':';
      cost.name += short_name(layer.modules[0].second->name());
    }
    for (const auto& p : layer.parameters()) cost.memory_bytes += 2 * p.nbytes();
    for (const auto& p : layer.parameters()) cost.parameter_bytes += p.nbytes();
    std::vector<double> times, forward_times;
    torch::Tensor y;
    int64_t activation_bytes = -1;
    try {
      for (int run = 0; run < options.warmup + options.repeats; ++run) {
        torch::Tensor in = x.detach();
        if (in.is_floating_point()) in.requires_grad_(true);
        y = torch::Tensor();
        const std::shared_ptr<void> scope = options.scope ? options.scope() : nullptr;
        synchronize(device);
        const int64_t before = live_bytes(device);
        const auto start = std::chrono::steady_clock::now();
        y = layer.forward(in);
        synchronize(device);
        const auto forward_end = std::chrono::steady_clock::now();
        const int64_t after = live_bytes(device);
        if (y.requires_grad()) y.backward(torch::ones_like(y));
        synchronize(device);
        const auto stop = std::chrono::steady_clock::now();
        if (run >= options.warmup) {
          times.push_back(std::chrono::duration<double>(stop - start).count());
          forward_times.push_back(std::chrono::duration<double>(forward_end - start).count());
        }
        if (before >= 0 && after >= 0) activation_bytes = after - before;
      }
    } catch (const std::exception& e) {
      TORCH_CHECK(false, "profile_layers: layer ", i, " (", cost.name, ") failed on input of shape ",
                  x.sizes(), ": ", error_text(e));
    }
    if (activation_bytes < 0) activation_bytes = x.nbytes() + y.nbytes();  // input saved + output
    cost.activation_bytes = std::max<int64_t>(activation_bytes, 0);
    cost.output_bytes = y.defined() ? static_cast<int64_t>(y.nbytes()) : 0;
    cost.memory_bytes += options.activation_copies * cost.activation_bytes;
    std::sort(times.begin(), times.end());
    std::sort(forward_times.begin(), forward_times.end());
    cost.time_s = times[times.size() / 2];
    cost.forward_s = std::min(forward_times[forward_times.size() / 2], cost.time_s);
    costs.push_back(cost);
    x = y.detach();
  }
  return costs;
}

}  // namespace paisoar::pipeline
