// Builds one batch: reads each sample through the data set with its own
// SampleRng(seed, epoch, index), checks labels and shapes, and copies the
// samples straight into one contiguous (optionally pinned) tensor. Used by the
// loader's workers; thread-safe as long as the data set is.
#pragma once

#include <cstdint>
#include <vector>

#include "paisoar/data/data_loader.h"
#include "src/data/batch_storage_pool.h"

namespace paisoar::data {

struct BatchRequest {
  const int64_t* indices = nullptr;  // data set indices of the batch's samples
  int64_t count = 0;
  int64_t epoch = 0;
  int64_t batch = 0;
};

// Throws DataError for a bad sample under OnError::Raise (and for a shape that
// differs from the batch's first sample, which no skipping can fix). The data
// tensor comes from `pool` when one is given and the batch is not pinned.
Batch build_batch(const Dataset& dataset, const BatchRequest& request,
                  const DataLoaderOptions& options, BatchStoragePool* pool = nullptr);

}  // namespace paisoar::data
