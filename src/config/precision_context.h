// The run's precision (amp.dtype, `auto` resolved for the device) and the one
// guard every forward pass of the Trainer runs under, training and evaluation
// alike: autocast, the precision policy's pinned regions and, optionally, the
// activation-checkpointing region runner.
#pragma once

#include <c10/core/DeviceType.h>

#include <optional>
#include <string>
#include <vector>

#include "paisoar/amp/autocast.h"
#include "paisoar/amp/precision_regions.h"
#include "paisoar/train/train_config.h"

namespace paisoar::train {

struct Precision {
  amp::AutocastOptions autocast;
  amp::PrecisionPolicy policy;  // amp.fp32_modules / low_modules
  std::string name;             // bf16, fp16 or fp32
  std::string reason;           // why, for the log
  // fp16: the loss is scaled (GradScaler).
  bool scales_loss() const { return autocast.enabled && autocast.dtype == c10::ScalarType::Half; }
};

Precision precision_for(const AmpConfig& amp, c10::DeviceType device);

// What the advisor may suggest for a compute-bound full-precision run on `device`.
std::string fast_precision_on(c10::DeviceType device);

// Scoped: autocast, then the policy's pins, then `recompute` (when not null)
// as the active region runner; undone in reverse. `precision` and `recompute`
// must outlive the guard. Not thread-safe: one forward pass on one thread.
class PrecisionContext {
 public:
  explicit PrecisionContext(const Precision& precision, amp::RegionRunner* recompute = nullptr);
  PrecisionContext(const PrecisionContext&) = delete;
  PrecisionContext& operator=(const PrecisionContext&) = delete;

  // The regions the model marked so far under this guard (for the policy check).
  const std::vector<std::string>& regions_seen() const { return pins_.regions_seen(); }

 private:
  amp::autocast autocast_;
  amp::ActivePolicy pins_;
  std::optional<amp::ActiveRegionRunner> recompute_;
};

}  // namespace paisoar::train
