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

#include <string>
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

// Runs `module(x)` (a module holder or any callable) as region `name`, its
// input cast to the region's precision.
template <typename Module>
torch::Tensor in_region(const std::string& name, const torch::Tensor& x, Module&& module) {
  auto pin = region(name);
  return std::forward<Module>(module)(pin.cast(x));
}

// The patterns of `policy` that match none of `regions` (typos, or names the
// model does not mark); empty when every pattern matched.
std::vector<std::string> unmatched_patterns(const PrecisionPolicy& policy, const std::vector<std::string>& regions);

}  // namespace paisoar::amp
