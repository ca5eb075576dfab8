// CheckpointRegions: the region runner that checkpoints matching regions.
#include "paisoar/memory/activation_checkpoint_regions.h"

#include <algorithm>

namespace paisoar::memory {

CheckpointRegions::CheckpointRegions(std::vector<std::string> patterns, ActivationCheckpointOptions options)
    : policy_(std::move(patterns), options), options_(options) {}

bool CheckpointRegions::takes(const std::string& name) {
  if (std::find(seen_.begin(), seen_.end(), name) == seen_.end()) seen_.push_back(name);
  return policy_.matches(name);
}

torch::Tensor CheckpointRegions::run(const std::string&, Fn fn, const torch::Tensor& x,
                                     std::vector<torch::Tensor> params) {
  ++checkpointed_;
  return checkpoint(fn, x, std::move(params), options_);
}

std::vector<std::string> CheckpointRegions::unmatched() const {
  std::vector<std::string> out;
  for (const auto& pattern : policy_.patterns()) {
    const CheckpointPolicy one({pattern});
    if (std::none_of(seen_.begin(), seen_.end(), [&](const std::string& n) { return one.matches(n); })) {
      out.push_back(pattern);
    }
  }
  return out;
}

}  // namespace paisoar::memory
