// measure_pair: how every benchmark times paisoar against its peer. The two
// alternate call by call (each call timed alone, the one going first swapped
// every call), so slow drifts of a noisy machine hit both equally.
// alternate_pair does the same for runs that measure themselves (a fresh
// process per run, as `bench amp` needs for peak memory).
#pragma once

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace paisoar::bench {

// The median of `values` (the upper one of the middle two for an even count).
// REQUIRES: !values.empty()
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Calls `ours` and `peer` `repeats` times each, alternating, the one going
// first swapped every repeat; returns what each call returned, in call order.
template <typename Ours, typename Peer>
auto alternate_pair(int repeats, Ours&& ours, Peer&& peer) {
  std::pair<std::vector<decltype(ours())>, std::vector<decltype(peer())>> out;
  for (int r = 0; r < repeats; ++r) {
    if (r % 2 == 0) {
      out.first.push_back(ours());
      out.second.push_back(peer());
    } else {
      out.second.push_back(peer());
      out.first.push_back(ours());
    }
  }
  return out;
}

// Median over `repeats` samples of the mean seconds per call of `ours` and of
// `peer`, `iters` calls of each per sample; `before_sample` runs before each
// sample (a barrier for distributed benchmarks).
template <typename Ours, typename Peer, typename BeforeSample>
std::pair<double, double> measure_pair(int iters, int repeats, Ours&& ours, Peer&& peer,
                                       BeforeSample&& before_sample) {
  auto timed = [](auto& op) {
    auto start = std::chrono::steady_clock::now();
    op();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<double> a, b;
  for (int r = 0; r < repeats; ++r) {
    before_sample();
    double ta = 0, tb = 0;
    for (int i = 0; i < iters; ++i) {
      if ((i + r) % 2 == 0) {
        ta += timed(ours);
        tb += timed(peer);
      } else {
        tb += timed(peer);
        ta += timed(ours);
      }
    }
    a.push_back(ta / iters);
    b.push_back(tb / iters);
  }
  return {median(std::move(a)), median(std::move(b))};
}

}  // namespace paisoar::bench
