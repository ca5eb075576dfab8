// Named precision regions: a model marks parts of its forward() by name, and
// the precision policy active on the thread decides each part's precision.
// This is how a policy from config (the Trainer's amp.fp32_modules and
// amp.low_modules) reaches models whose forward() is hand-written C++:
//
//   torch::Tensor MyNetImpl::forward(torch::Tensor x) {
//     x = amp::in_region("body", x, body);
//     return amp::in_region("head", x, head);  // fp32 if the policy says "head: fp32"
//   }
//
// With no policy active, or no rule for the name, a region inherits the
// surrounding precision and costs a thread-local read. The reference models
// mark their top-level children (docs/AMP.md lists them).
#pragma once

#include <c10/core/DeviceType.h>
#include <torch/types.h>

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "paisoar/amp/precision.h"

namespace paisoar::amp {

// Makes `policy` the one regions entered on this thread consult, until
// destroyed (then the previous one is back). `policy` must outlive the guard.
class ActivePolicy {
 public:
  ActivePolicy(const PrecisionPolicy& policy, c10::DeviceType device);
  ~ActivePolicy();
  ActivePolicy(const ActivePolicy&) = delete;
  ActivePolicy& operator=(const ActivePolicy&) = delete;

  // The region names entered while this guard was active, each once, in order.
  const std::vector<std::string>& regions_seen() const { return seen_; }

 private:
  friend PrecisionScope region(const std::string& name);
  const PrecisionPolicy& policy_;
  c10::DeviceType device_;
  ActivePolicy* previous_;
  std::vector<std::string> seen_;
};

// The scope for region `name` under the thread's active policy.
PrecisionScope region(const std::string& name);

// Runs chosen regions another way: memory::CheckpointRegions recomputes them
// in backward instead of keeping their activations (the Trainer's
// `activation_checkpointing: [patterns]`). One runner is active per thread,
// through ActiveRegionRunner; regions entered with in_region() consult it.
class RegionRunner {
 public:
  using Fn = std::function<torch::Tensor(const torch::Tensor&)>;
  virtual ~RegionRunner() = default;
  // Asked for every in_region() entered while the runner is active: whether it
  // runs this region (then run() is called) or the region runs plainly.
  virtual bool takes(const std::string& name) = 0;
  // Returns fn(x). `fn` owns the region's module; `params` are its parameters.
  virtual torch::Tensor run(const std::string& name, Fn fn, const torch::Tensor& x,
                            std::vector<torch::Tensor> params) = 0;
};

// Makes `runner` the one in_region() consults on this thread until destroyed
// (then the previous one is back). `runner` must outlive the guard.
class ActiveRegionRunner {
 public:
  explicit ActiveRegionRunner(RegionRunner& runner);
  ~ActiveRegionRunner();
  ActiveRegionRunner(const ActiveRegionRunner&) = delete;
  ActiveRegionRunner& operator=(const ActiveRegionRunner&) = delete;

 private:
  RegionRunner* previous_;
};

namespace detail {
RegionRunner* active_region_runner();
// Throws c10::Error: a runner took region `name`, which a model computes with
// a function rather than a module (nothing owns its parameters).
[[noreturn]] void region_is_not_a_module(const std::string& name);

template <typename T>
struct is_module_pointer : std::false_type {};
template <typename T>
struct is_module_pointer<std::shared_ptr<T>> : std::is_base_of<torch::nn::Module, T> {};
template <typename M>
constexpr bool is_module_v = std::is_base_of_v<torch::detail::ModuleHolderIndicator, std::decay_t<M>> ||
                             is_module_pointer<std::decay_t<M>>::value;
}  // namespace detail

// Runs `module(x)` as region `name`, its input cast to the region's precision.
// `module` is a module holder (torch::nn::Linear, a TORCH_MODULE type), a
// std::shared_ptr to a module, or any callable; only modules can be taken by a
// RegionRunner (checkpointed), so models should pass the module itself.
template <typename Module>
torch::Tensor in_region(const std::string& name, const torch::Tensor& x, Module&& module) {
  auto pin = region(name);
  RegionRunner* runner = detail::active_region_runner();
  if constexpr (detail::is_module_v<Module>) {
    if (runner != nullptr && runner->takes(name)) {
      std::decay_t<Module> held = module;  // shares the module; lives as long as backward needs it
      auto params = held->parameters();
      return runner->run(name, [held](const torch::Tensor& t) mutable { return held->forward(t); }, pin.cast(x),
                         std::move(params));
    }
    return module->forward(pin.cast(x));
  } else {
    if (runner != nullptr && runner->takes(name)) detail::region_is_not_a_module(name);
    return std::forward<Module>(module)(pin.cast(x));
  }
}

// The patterns of `policy` that match none of `regions` (typos, or names the
// model does not mark); empty when every pattern matched.
std::vector<std::string> unmatched_patterns(const PrecisionPolicy& policy, const std::vector<std::string>& regions);

}  // namespace paisoar::amp
