// FiniteLossCheck: catches a NaN/inf loss before backward spreads it into the
// weights (fp32 training has no GradScaler to skip the step), reports the
// step number, and either stops training or skips the step on every rank.
#pragma once

#include <c10/util/Exception.h>

#include <cstdint>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::amp {

enum class OnNonFiniteLoss {
  Stop,  // throw NonFiniteLossError (default: a NaN loss is a bug to look at)
  Skip,  // warn, count, and tell the caller to skip backward and step
};

struct FiniteLossCheckOptions {
  OnNonFiniteLoss action = OnNonFiniteLoss::Stop;
  // With Skip: stop anyway after this many consecutive skipped steps (0: never),
  // since a loss that stays non-finite will not recover by skipping.
  int64_t max_consecutive_skips = 10;
};

class NonFiniteLossError : public c10::Error {
 public:
  NonFiniteLossError(const std::string& message, int64_t step)
      : c10::Error(message), step_(step) {}
  int64_t step() const { return step_; }

 private:
  int64_t step_;
};

// Usage, once per step before backward:
//   if (!check(loss, step)) continue;   // skipped (Skip) on every rank
class FiniteLossCheck {
 public:
  // With a Communicator the verdict is agreed by all ranks (one 1-element
  // allreduce per call), so data-parallel ranks skip or stop together; every
  // rank must then call check() each step.
  explicit FiniteLossCheck(FiniteLossCheckOptions options = {},
                           std::shared_ptr<comm::Communicator> comm = nullptr);

  // True when the loss is finite on every rank. Otherwise Stop throws
  // NonFiniteLossError naming `step` (and whether this rank saw it); Skip
  // returns false. Reads the loss on the host (one sync).
  bool operator()(const at::Tensor& loss, int64_t step);

  int64_t skipped_steps() const { return skipped_steps_; }

 private:
  FiniteLossCheckOptions options_;
  std::shared_ptr<comm::Communicator> comm_;
  int64_t skipped_steps_ = 0;
  int64_t consecutive_ = 0;
};

}  // namespace paisoar::amp
