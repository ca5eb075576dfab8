// Which sample indices one rank reads in one epoch, with the semantics (and,
// for the same seed, the exact order) of torch.utils.data.DistributedSampler:
// shuffle with a generator seeded seed + epoch, pad by repeating the head so
// every rank gets the same count (or drop the tail with drop_last), then
// rank r takes positions r, r + world, r + 2 world, ...
#pragma once

#include <cstdint>
#include <vector>

namespace paisoar::data {

struct SamplerOptions {
  int64_t rank = 0;
  int64_t world_size = 1;
  bool shuffle = true;
  uint64_t seed = 0;
  // Drop the tail that does not divide evenly instead of padding.
  bool drop_last = false;
};

class DistributedSampler {
 public:
  // Throws c10::ValueError for a rank outside [0, world_size) or an
  // empty data set.
  DistributedSampler(int64_t dataset_size, SamplerOptions options);

  // This rank's indices for `epoch`; the same on every call and every machine.
  std::vector<int64_t> indices(int64_t epoch) const;
  // How many indices each rank gets per epoch.
  int64_t per_rank() const { return per_rank_; }
  const SamplerOptions& options() const { return options_; }

 private:
  int64_t size_;
  SamplerOptions options_;
  int64_t per_rank_;
};

}  // namespace paisoar::data
