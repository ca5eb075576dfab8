// DistributedSampler: torch's randperm with a CPU generator seeded seed + epoch
// gives the same permutation Python's DistributedSampler draws.
#include "paisoar/data/distributed_sampler.h"

#include <c10/util/Exception.h>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <stdexcept>
#include <string>

namespace paisoar::data {

DistributedSampler::DistributedSampler(int64_t dataset_size, SamplerOptions options)
    : size_(dataset_size), options_(options) {
  if (options_.world_size < 1 || options_.rank < 0 || options_.rank >= options_.world_size) {
    C10_THROW_ERROR(ValueError, "DistributedSampler: rank " + std::to_string(options_.rank) +
                                " is outside [0, world_size=" +
                                std::to_string(options_.world_size) + ")");
  }
  if (size_ < 1) {
    C10_THROW_ERROR(ValueError, "DistributedSampler: the data set is empty; check its path");
  }
  if (options_.drop_last && size_ < options_.world_size) {
    C10_THROW_ERROR(ValueError, 
        "DistributedSampler: drop_last with " + std::to_string(size_) + " samples and " +
        std::to_string(options_.world_size) + " ranks leaves every rank nothing; turn drop_last off");
  }
  per_rank_ = options_.drop_last ? size_ / options_.world_size
                                 : (size_ + options_.world_size - 1) / options_.world_size;
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(size_));
  if (options_.shuffle) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(options_.seed + static_cast<uint64_t>(epoch));
    const auto perm = torch::randperm(size_, generator, torch::kLong);
    const int64_t* p = perm.data_ptr<int64_t>();
    order.assign(p, p + size_);
  } else {
    for (int64_t i = 0; i < size_; ++i) order[static_cast<size_t>(i)] = i;
  }
  const int64_t total = per_rank_ * options_.world_size;
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(per_rank_));
  // Positions past the end wrap to the head: the padding repeats samples.
  for (int64_t pos = options_.rank; pos < total; pos += options_.world_size) {
    mine.push_back(order[static_cast<size_t>(pos % size_)]);
  }
  return mine;
}

}  // namespace paisoar::data
