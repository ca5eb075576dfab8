// ShmWaitPolicy::record and the per-thread policy.
#include "src/comm/shm_wait_policy.h"

#include <algorithm>

namespace paisoar::comm::detail {
namespace {

using Duration = ShmWaitPolicy::Duration;

Duration bounded(Duration d, Duration lo, Duration hi) { return std::clamp(d, lo, hi); }

// A budget that covered a wait of `waited`: toward twice that, slowly down.
Duration covered(Duration budget, Duration waited, Duration lo, Duration hi) {
  return bounded(std::max(budget - budget / 16, 2 * waited), lo, hi);
}

// A wait slept but ended within reach of a longer budget: stretch it to
// cover such a wait next time.
Duration stretched(Duration budget, Duration waited, Duration lo, Duration hi) {
  return bounded(std::max(budget, waited + waited / 2), lo, hi);
}

}  // namespace

void ShmWaitPolicy::record(Duration waited, Ended ended, bool oversubscribed) {
  if (oversubscribed) {
    Duration& y = oversubscribed_yield_;
    if (ended != Ended::kAsleep) {
      y = covered(y, waited, kMinYield, kMaxYield);
    } else if (waited <= kMaxYield) {
      y = stretched(y, waited, kMinYield, kMaxYield);
    } else {
      y = std::max(kMinYield, y - y / 4);
    }
    return;
  }
  switch (ended) {
    case Ended::kSpinning:
      spin_ = covered(spin_, waited, kMinSpin, kMaxSpin);
      break;
    case Ended::kYielding:
      spin_ = bounded(std::max(spin_, 2 * waited), kMinSpin, kMaxSpin);
      yield_ = covered(yield_, waited, kMinYield, kMaxYield);
      break;
    case Ended::kAsleep:
      if (waited <= kMaxYield) {
        yield_ = stretched(yield_, waited, kMinYield, kMaxYield);
      } else {  // the peer was far away: spinning bought nothing
        spin_ = std::max(kMinSpin, spin_ / 2);
        yield_ = std::max(kMinYield, yield_ - yield_ / 4);
      }
      break;
  }
}

ShmWaitPolicy& ShmWaitPolicy::of_this_thread() {
  thread_local ShmWaitPolicy policy;
  return policy;
}

}  // namespace paisoar::comm::detail
