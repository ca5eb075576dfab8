// The random numbers one sample's augmentation draws. It is a pure function of
// (seed, epoch, index), so a sample gets the same crop and flip whichever
// worker thread decodes it and however many workers there are: the order and
// content of an epoch depend only on the seed. Not thread-safe; one per sample.
#pragma once

#include <cmath>
#include <cstdint>

namespace paisoar::data {

// SplitMix64 (Steele, Lea, Flood 2014): a fast 64-bit generator whose stream
// is well mixed from any starting state, so nearby (seed, epoch, index) give
// unrelated streams.
class SampleRng {
 public:
  explicit SampleRng(uint64_t state) : state_(state) {}
  SampleRng(uint64_t seed, uint64_t epoch, uint64_t index)
      : state_(mix(mix(mix(seed) ^ epoch) ^ index)) {}

  uint64_t next_u64() {
    state_ += 0x9E3779B97F4A7C15ull;
    return mix(state_);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [lo, hi] (inclusive); requires lo <= hi.
  int64_t uniform_int(int64_t lo, int64_t hi) {
    const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    return span == 0 ? static_cast<int64_t>(next_u64()) : lo + static_cast<int64_t>(next_u64() % span);
  }
  bool bernoulli(double p) { return uniform() < p; }

  static uint64_t mix(uint64_t z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

}  // namespace paisoar::data
