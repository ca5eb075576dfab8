// Named precision regions: one active policy (and one region runner) per
// thread, each kept as a stack of guards so nested guards restore the outer one.
#include "paisoar/amp/precision_regions.h"

#include <c10/util/Exception.h>

#include <algorithm>

namespace paisoar::amp {
namespace {

thread_local ActivePolicy* t_active = nullptr;
thread_local RegionRunner* t_runner = nullptr;

}  // namespace

ActivePolicy::ActivePolicy(const PrecisionPolicy& policy, c10::DeviceType device)
    : policy_(policy), device_(device), previous_(t_active) {
  t_active = this;
}

ActivePolicy::~ActivePolicy() { t_active = previous_; }

PrecisionScope region(const std::string& name) {
  ActivePolicy* active = t_active;
  if (active == nullptr) return PrecisionScope(Precision::Inherit);
  if (std::find(active->seen_.begin(), active->seen_.end(), name) == active->seen_.end()) {
    active->seen_.push_back(name);
  }
  return PrecisionScope(active->policy_.precision_for(name), active->device_);
}

ActiveRegionRunner::ActiveRegionRunner(RegionRunner& runner) : previous_(t_runner) { t_runner = &runner; }

ActiveRegionRunner::~ActiveRegionRunner() { t_runner = previous_; }

namespace detail {

RegionRunner* active_region_runner() { return t_runner; }

void region_is_not_a_module(const std::string& name) {
  TORCH_CHECK(false, "model region '", name, "' is computed by a function, not a module, so it cannot be run "
              "another way (activation checkpointing needs the module that owns its parameters); pass the "
              "module to amp::in_region, or choose other regions");
}

}  // namespace detail

std::vector<std::string> unmatched_patterns(const PrecisionPolicy& policy, const std::vector<std::string>& regions) {
  std::vector<std::string> unmatched;
  for (const auto& [pattern, precision] : policy.rules()) {
    const bool hit = std::any_of(regions.begin(), regions.end(),
                                 [&](const std::string& name) { return glob_match(pattern, name); });
    if (!hit) unmatched.push_back(pattern);
  }
  return unmatched;
}

}  // namespace paisoar::amp
