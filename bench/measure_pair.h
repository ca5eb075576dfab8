// measure_pair: how every benchmark times paisoar against its peer. The two
// alternate call by call (each call timed alone, the one going first swapped
// every call), so slow drifts of a noisy machine hit both equally.
#pragma once

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace paisoar::bench {

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
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return {a[a.size() / 2], b[b.size() / 2]};
}

}  // namespace paisoar::bench
