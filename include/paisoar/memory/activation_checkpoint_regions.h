// CheckpointRegions: activation checkpointing by region name, for models whose
// forward() is hand-written. Models mark their parts with amp::in_region (the
// reference models mark their top-level children); while a CheckpointRegions
// is active on the thread, every region whose name matches one of its
// patterns is checkpointed (memory::checkpoint: activations dropped after
// forward, recomputed in backward, RNG and autocast replayed). This is what
// the Trainer's `activation_checkpointing: ["layer*"]` uses.
//
//   memory::CheckpointRegions regions({"layer*"});
//   {
//     amp::ActiveRegionRunner active(regions);
//     loss = loss_fn(model->forward(x), y);
//   }
//   loss.backward();
//   // regions.unmatched(): patterns that matched none of regions.seen()
#pragma once

#include <string>
#include <vector>

#include "paisoar/amp/precision_regions.h"
#include "paisoar/memory/activation_checkpoint.h"
#include "paisoar/memory/activation_checkpoint_policy.h"

namespace paisoar::memory {

// Used on one thread at a time (the one running forward).
class CheckpointRegions : public amp::RegionRunner {
 public:
  // Throws c10::ValueError for an empty pattern.
  explicit CheckpointRegions(std::vector<std::string> patterns, ActivationCheckpointOptions options = {});

  bool takes(const std::string& name) override;
  torch::Tensor run(const std::string& name, Fn fn, const torch::Tensor& x,
                    std::vector<torch::Tensor> params) override;

  // Every region name entered while active, once each, in order.
  const std::vector<std::string>& seen() const { return seen_; }
  // The patterns that matched none of seen() (typos, or names the model does not mark).
  std::vector<std::string> unmatched() const;
  // Regions checkpointed so far (counting each forward).
  int64_t checkpointed() const { return checkpointed_; }

 private:
  CheckpointPolicy policy_;
  ActivationCheckpointOptions options_;
  std::vector<std::string> seen_;
  int64_t checkpointed_ = 0;
};

}  // namespace paisoar::memory
