// The loader that keeps training fed: N worker threads build whole batches
// ahead of the consumer (at most prefetch_factor per worker in flight), each
// collated into one contiguous tensor, delivered strictly in order. The order
// and content of an epoch depend only on (seed, epoch, rank, world size), not
// on the number of workers, so a position saved mid-epoch resumes exactly.
//
//   DataLoaderOptions options;
//   options.batch_size = 64;
//   DataLoader loader(dataset, options);
//   for (int64_t epoch = 0; epoch < epochs; ++epoch) {
//     loader.start_epoch(epoch);
//     while (auto batch = loader.next()) train_step(batch->data, batch->labels);
//   }
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "paisoar/data/dataset.h"
#include "paisoar/data/distributed_sampler.h"

namespace paisoar::data {

enum class OnError {
  Raise,  // a bad sample stops the epoch: next() throws its DataError
  Skip,   // drop it from its batch, count it in LoaderStats::skipped, go on
};

struct DataLoaderOptions {
  int64_t batch_size = 64;       // per rank
  int64_t workers = 4;           // 0: build batches in the calling thread
  int64_t prefetch_factor = 2;   // batches in flight per worker
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;        // drop the last, partial batch of each epoch
  int64_t rank = 0;              // distributed sampling: this rank's share,
  int64_t world_size = 1;        // padded so every rank takes the same steps
  OnError on_error = OnError::Raise;
  // Collate into page-locked memory so the host-to-device copy can overlap;
  // takes effect only where CUDA is available.
  bool pin_memory = false;
};

struct Batch {
  torch::Tensor data;     // [B, ...] the samples' data, stacked
  torch::Tensor labels;   // int64 [B]
  torch::Tensor indices;  // int64 [B]: the data set index of each sample
  int64_t epoch = 0;
  int64_t index = 0;      // batch number within the epoch
  int64_t skipped = 0;    // samples of this batch dropped by OnError::Skip
  // Why the first few of them were dropped (each names the sample and its file).
  std::vector<std::string> skipped_why;
  double wait_s = 0.0;    // how long next() waited for this batch
};

// Where the loader is: the next batch next() returns. Saved in checkpoints.
struct LoaderPosition {
  int64_t epoch = 0;
  int64_t batch = 0;
};

struct LoaderStats {
  // At most this many reasons are kept in skipped_why.
  static constexpr size_t kReasonsKept = 3;
  int64_t batches = 0;        // delivered since construction
  int64_t samples = 0;        // delivered since construction
  int64_t skipped = 0;        // samples dropped by OnError::Skip
  std::vector<std::string> skipped_why;  // why the first few were dropped
  double total_wait_s = 0.0;  // the consumer's waits, summed
  double last_wait_s = 0.0;
};

class BatchStoragePool;

class DataLoader {
 public:
  // Throws c10::ValueError naming the bad option.
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options);
  ~DataLoader();  // stops the workers and joins them
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Starts (or restarts) `epoch` at batch `first_batch`; the batches before it
  // are not loaded. Workers begin prefetching at once.
  void start_epoch(int64_t epoch, int64_t first_batch = 0);
  // The next batch of the current epoch (starting epoch 0 if none was ever
  // started), or nullopt when the epoch is over. Rethrows a worker's error
  // (after stopping the workers); then start_epoch() or set_position()
  // continues, and next() without one throws c10::Error.
  std::optional<Batch> next();

  LoaderPosition position() const;
  void set_position(const LoaderPosition& position) { start_epoch(position.epoch, position.batch); }

  int64_t batches_per_epoch() const;
  const LoaderStats& stats() const { return stats_; }
  const DataLoaderOptions& options() const { return options_; }
  const Dataset& dataset() const { return *dataset_; }

 private:
  struct Epoch;
  void stop_epoch();
  void start_workers(Epoch* epoch);

  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  DistributedSampler sampler_;
  std::unique_ptr<Epoch> epoch_;  // owned by the consumer thread; workers see it through its lock
  std::shared_ptr<BatchStoragePool> pool_;  // batches' memory, recycled; thread-safe
  LoaderPosition failed_at_;      // position() while no epoch runs (never started, or after an error)
  bool started_ = false;          // an epoch was started (next() then never starts epoch 0 by itself)
  LoaderStats stats_;
};

}  // namespace paisoar::data
