// ZeroOptions: which ZeRO stage, and how parameters are grouped into units
// (gradient buckets) for stages 1 and 2.
#pragma once

#include <c10/core/ScalarType.h>

#include <string>
#include <vector>

namespace paisoar::zero {

struct ZeroOptions {
  // 1: optimizer state sharded; 2: + gradients; 3: + parameters (needs a
  // zero::LayerList model, see layer_list.h, or `units`).
  int stage = 1;
  // Each unit's parameter names, in forward order, every trainable parameter
  // in exactly one (GatherRegions::units_of gives one per layer of a
  // models::LayerSequence). At stage 3 the caller brackets each use of unit k
  // with ZeroOptimizer::unit_forward_begin/end(k) and calls
  // unit_backward_begin(k) before its backward (GatherRegions does); at
  // stages 1-2 they replace the buckets below. Empty: the buckets (stages
  // 1-2) or the LayerList's layers (stage 3).
  std::vector<std::vector<std::string>> units;
  // Stages 1-2: parameters are bucketed like DDP's (reverse registration
  // order, the first bucket smaller so communication starts early); each
  // bucket is one unit, padded to a multiple of the world size.
  double bucket_cap_mb = 25;
  double first_bucket_mb = 1;
  // The precision the gradients travel in: Half or BFloat16 halves the
  // reduce-scatter's bytes (the sum is taken in fp32 inside paisoar's
  // backends and rounded once), as FSDP's MixedPrecision(reduce_dtype) does;
  // Undefined: the gradients' own dtype.
  c10::ScalarType reduce_dtype = c10::ScalarType::Undefined;
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
