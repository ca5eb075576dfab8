// How long a shared-memory wait spins and then yields its core before it
// sleeps on the futex, learnt from the waits the same thread saw instead of
// fixed timers. A wait that ends while spinning or yielding costs what it
// waited; one that sleeps pays a futex wake-up on top (tens of microseconds)
// but leaves the core to the rank's other threads. So: waits that end a
// little after the budget (a peer a few microseconds late, as in a
// collective's inner phases) stretch it to cover them; waits that end far
// beyond it (a peer still computing) shrink it, since the spinning bought
// nothing; waits that end well inside it let it shrink slowly toward twice
// what they take. With more ranks than cores spinning only keeps the awaited
// rank off a core, so it yields at once and learns only how long to yield.
#pragma once

#include <chrono>

namespace paisoar::comm::detail {

class ShmWaitPolicy {
 public:
  using Duration = std::chrono::nanoseconds;

  // Bounds of the two budgets.
  static constexpr Duration kMinSpin = std::chrono::microseconds(2);
  static constexpr Duration kMaxSpin = std::chrono::microseconds(100);
  static constexpr Duration kMinYield = std::chrono::microseconds(20);
  static constexpr Duration kMaxYield = std::chrono::microseconds(2000);
  // Where a wait starts: the fixed timers it replaces.
  static constexpr Duration kStartSpin = std::chrono::microseconds(20);
  static constexpr Duration kStartYield = std::chrono::microseconds(200);
  static constexpr Duration kStartOversubscribedYield = std::chrono::microseconds(1000);

  enum class Ended { kSpinning, kYielding, kAsleep };

  // Spin, then yield, for these long (spin is 0 when oversubscribed).
  Duration spin(bool oversubscribed) const { return oversubscribed ? Duration(0) : spin_; }
  Duration yield(bool oversubscribed) const { return oversubscribed ? oversubscribed_yield_ : yield_; }

  // A wait that became ready after `waited`, in the phase `ended`. Timed-out
  // waits and errors are not recorded.
  void record(Duration waited, Ended ended, bool oversubscribed);

  // The calling thread's policy (each lane's thread and each caller learns
  // its own pattern).
  static ShmWaitPolicy& of_this_thread();

 private:
  Duration spin_ = kStartSpin;
  Duration yield_ = kStartYield;
  Duration oversubscribed_yield_ = kStartOversubscribedYield;
};

}  // namespace paisoar::comm::detail
