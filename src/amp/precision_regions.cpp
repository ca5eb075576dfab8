// Named precision regions: one active policy per thread, kept as a stack of
// guards so nested guards restore the outer one.
#include "paisoar/amp/precision_regions.h"

#include <algorithm>

namespace paisoar::amp {
namespace {

thread_local ActivePolicy* t_active = nullptr;

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
