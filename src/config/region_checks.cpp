// policy_of and the unmatched-pattern errors, with one way of listing regions.
#include "src/config/region_checks.h"

#include "paisoar/train/config_schema.h"

namespace paisoar::train {
namespace {

// The regions a model marked, for an error about a pattern that matched none.
template <typename Names>
std::string region_list(const Names& regions) {
  std::string names;
  for (const auto& r : regions) names += (names.empty() ? "" : ", ") + r;
  return names.empty() ? "it marks none: see amp/precision_regions.h" : names;
}

}  // namespace

amp::PrecisionPolicy policy_of(const AmpConfig& amp) {
  amp::PrecisionPolicy policy;
  for (const auto& pattern : amp.fp32_modules) policy.add(pattern, amp::Precision::Full);
  for (const auto& pattern : amp.low_modules) policy.add(pattern, amp::Precision::Low);
  return policy;
}

// After the first forward: every pattern must have matched a region the model marks.
void check_policy_matched(const amp::PrecisionPolicy& policy, const std::vector<std::string>& regions) {
  const auto unmatched = amp::unmatched_patterns(policy, regions);
  if (unmatched.empty()) return;
  throw ConfigError("amp.fp32_modules/amp.low_modules: '" + unmatched.front() +
                    "' matches none of the model's precision regions (" + region_list(regions) + ")");
}

// After the first forward: every activation_checkpointing pattern must have
// matched a region the model marks.
void check_checkpointing_matched(const memory::CheckpointRegions& regions) {
  const auto unmatched = regions.unmatched();
  if (unmatched.empty()) return;
  throw ConfigError("activation_checkpointing: '" + unmatched.front() + "' matches none of the model's regions (" +
                    region_list(regions.seen()) + ")");
}

}  // namespace paisoar::train
