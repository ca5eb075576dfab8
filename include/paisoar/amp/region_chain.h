// RegionChain: several region runners active at once, one wrapping the next.
// A region that more than one of them takes runs through each, the first
// outermost: activation checkpointing outside ZeRO-3's gathering, so the
// recomputation in backward gathers the layer's parameters again.
#pragma once

#include <string>
#include <vector>

#include "paisoar/amp/precision_regions.h"

namespace paisoar::amp {

// Used on one thread at a time; the runners must outlive it.
class RegionChain : public RegionRunner {
 public:
  // Null entries are skipped.
  explicit RegionChain(std::vector<RegionRunner*> outermost_first);

  bool empty() const { return runners_.empty(); }
  // Asks every runner (each keeps its own record of the regions seen).
  bool takes(const std::string& name) override;
  torch::Tensor run(const std::string& name, Fn fn, const torch::Tensor& x,
                    std::vector<torch::Tensor> params) override;

 private:
  std::vector<RegionRunner*> runners_;
  std::vector<char> took_;  // the last takes()'s answers, read by the run() that follows it
};

}  // namespace paisoar::amp
