// ZeroOptions: which ZeRO stage, and how parameters are grouped into units
// (gradient buckets) for stages 1 and 2.
#pragma once

#include <string>
#include <vector>

namespace paisoar::zero {

struct ZeroOptions {
  // 1: optimizer state sharded; 2: + gradients; 3: + parameters (needs a
  // zero::LayerList model, see layer_list.h, or `units`).
  int stage = 1;
  // Stage 3 for a model whose forward paisoar does not run (a Python
  // module): each unit's parameter names, in forward order, every trainable
  // parameter in exactly one. The caller brackets each use of unit k with
  // ZeroOptimizer::unit_forward_begin/end(k), and calls
  // unit_backward_begin(k) before its backward. Empty: the LayerList's layers.
  std::vector<std::vector<std::string>> units;
  // Stages 1-2: parameters are bucketed like DDP's (reverse registration
  // order, the first bucket smaller so communication starts early); each
  // bucket is one unit, padded to a multiple of the world size.
  double bucket_cap_mb = 25;
  double first_bucket_mb = 1;
  // Reduce-scatter a unit's gradients as soon as its last one is in (during
  // backward); false: all units at the end of backward (a baseline).
  bool overlap = true;
  // At most this many units' reduce-scatters in flight during backward: the
  // oldest is waited for (and, from stage 2, its full gradient buffer and the
  // communicator's receive buffer freed) before another is launched, so a
  // step never holds every unit's full gradients at once.
  int max_inflight_units = 2;
  // The model's forward may leave parameters out of the loss: their gradient
  // counts as zero. false: a parameter without a gradient in a synchronised
  // backward is an error on every rank (DdpOptions has the same switch).
  bool find_unused_parameters = false;
  // Stage 3: gather the next layer's parameters while this one computes.
  bool prefetch = true;
  // Print the one-line note that a 1-rank ZeRO saves no memory.
  bool warn_single_rank = true;
};

}  // namespace paisoar::zero
