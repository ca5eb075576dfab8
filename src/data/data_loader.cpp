// DataLoader: one Epoch object per started epoch holds the sampler's indices,
// the worker threads and the finished batches. Workers claim batch numbers in
// order from a shared counter, never more than `window` ahead of the consumer,
// so memory stays bounded and a slow consumer stalls the workers, not the
// other way round.
#include "paisoar/data/data_loader.h"

#include <c10/util/Exception.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "src/data/batch_builder.h"

namespace paisoar::data {

struct DataLoader::Epoch {
  int64_t number = 0;
  std::vector<int64_t> indices;  // this rank's, for the whole epoch; read-only once built
  int64_t batches = 0;
  int64_t window = 1;

  std::mutex mutex;  // guards everything below
  std::condition_variable worker_cv;
  std::condition_variable consumer_cv;
  int64_t next_claim = 0;     // the next batch a worker builds
  int64_t next_deliver = 0;   // the next batch next() returns
  bool stopping = false;
  struct Result {
    Batch batch;
    std::exception_ptr error;
  };
  std::map<int64_t, Result> done;
  std::vector<std::thread> workers;  // joined by stop_epoch()

  BatchRequest request(int64_t b, const DataLoaderOptions& options) const {
    const int64_t begin = b * options.batch_size;
    const int64_t end = std::min<int64_t>(begin + options.batch_size, static_cast<int64_t>(indices.size()));
    return BatchRequest{indices.data() + begin, end - begin, number, b};
  }
};

namespace {

void check_options(const DataLoaderOptions& o) {
  auto fail = [](const std::string& what) {
    C10_THROW_ERROR(ValueError, "DataLoader: " + what);
  };
  if (o.batch_size < 1) fail("batch_size must be at least 1, got " + std::to_string(o.batch_size));
  if (o.workers < 0) fail("workers must be 0 or more, got " + std::to_string(o.workers));
  if (o.prefetch_factor < 1) {
    fail("prefetch_factor must be at least 1, got " + std::to_string(o.prefetch_factor));
  }
}

SamplerOptions sampler_options(const DataLoaderOptions& o) {
  SamplerOptions s;
  s.rank = o.rank;
  s.world_size = o.world_size;
  s.shuffle = o.shuffle;
  s.seed = o.seed;
  return s;
}

int64_t dataset_size(const std::shared_ptr<const Dataset>& dataset) {
  if (!dataset) C10_THROW_ERROR(ValueError, "DataLoader: the data set is null");
  return dataset->size();
}

}  // namespace

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)),
      options_(options),
      sampler_((check_options(options), dataset_size(dataset_)), sampler_options(options)),
      // The prefetch window, plus the batches the consumer may still hold.
      pool_(BatchStoragePool::create(static_cast<size_t>(std::max<int64_t>(1, options.workers) *
                                                         options.prefetch_factor + 2))) {}

DataLoader::~DataLoader() { stop_epoch(); }

int64_t DataLoader::batches_per_epoch() const {
  const int64_t n = sampler_.per_rank();
  return options_.drop_last ? n / options_.batch_size
                            : (n + options_.batch_size - 1) / options_.batch_size;
}

void DataLoader::stop_epoch() {
  if (!epoch_) return;
  {
    std::lock_guard<std::mutex> lock(epoch_->mutex);
    epoch_->stopping = true;
  }
  epoch_->worker_cv.notify_all();
  for (auto& t : epoch_->workers) t.join();
  epoch_.reset();
}

void DataLoader::start_epoch(int64_t epoch, int64_t first_batch) {
  stop_epoch();
  const int64_t batches = batches_per_epoch();
  if (epoch < 0 || first_batch < 0 || first_batch > batches) {
    C10_THROW_ERROR(ValueError, "DataLoader: position (epoch " + std::to_string(epoch) +
                                ", batch " + std::to_string(first_batch) +
                                ") is outside an epoch of " + std::to_string(batches) +
                                " batches; was the checkpoint made with another batch size "
                                "or world size?");
  }
  auto e = std::make_unique<Epoch>();
  e->number = epoch;
  e->indices = sampler_.indices(epoch);
  e->batches = batches;
  e->next_claim = e->next_deliver = first_batch;
  e->window = std::max<int64_t>(1, options_.workers) * options_.prefetch_factor;
  Epoch* ep = e.get();
  epoch_ = std::move(e);  // owned before any worker starts, so stop_epoch() can join them
  started_ = true;
  try {
    start_workers(ep);
  } catch (...) {
    stop_epoch();
    throw;
  }
}

void DataLoader::start_workers(Epoch* ep) {
  for (int64_t w = 0; w < options_.workers; ++w) {
    ep->workers.emplace_back([this, ep] {
      std::unique_lock<std::mutex> lock(ep->mutex);
      for (;;) {
        ep->worker_cv.wait(lock, [ep] {
          return ep->stopping || ep->next_claim >= ep->batches ||
                 ep->next_claim < ep->next_deliver + ep->window;
        });
        if (ep->stopping || ep->next_claim >= ep->batches) return;
        const int64_t b = ep->next_claim++;
        lock.unlock();
        Epoch::Result result;
        try {
          result.batch = build_batch(*dataset_, ep->request(b, options_), options_, pool_.get());
        } catch (...) {
          result.error = std::current_exception();
        }
        lock.lock();
        ep->done.emplace(b, std::move(result));
        ep->consumer_cv.notify_one();
      }
    });
  }
}

std::optional<Batch> DataLoader::next() {
  if (!epoch_) {
    if (started_) {
      C10_THROW_ERROR(Error, "DataLoader::next: the epoch stopped on an error; call start_epoch() "
                             "or set_position(position()) to go on");
    }
    start_epoch(0);
  }
  Epoch& e = *epoch_;
  const auto t0 = std::chrono::steady_clock::now();
  Epoch::Result result;
  {
    std::unique_lock<std::mutex> lock(e.mutex);
    if (e.next_deliver >= e.batches) return std::nullopt;
    const int64_t b = e.next_deliver;
    if (options_.workers == 0) {
      lock.unlock();
      try {
        result.batch = build_batch(*dataset_, e.request(b, options_), options_, pool_.get());
      } catch (...) {
        result.error = std::current_exception();
      }
      lock.lock();
    } else {
      e.consumer_cv.wait(lock, [&] { return e.done.count(b) > 0; });
      auto it = e.done.find(b);
      result = std::move(it->second);
      e.done.erase(it);
    }
    if (!result.error) ++e.next_deliver;
  }
  e.worker_cv.notify_all();
  if (result.error) {
    // Stop the workers before the error leaves, so none outlives this epoch;
    // position() still names the failed batch.
    const LoaderPosition at = position();
    stop_epoch();
    failed_at_ = at;
    std::rethrow_exception(result.error);
  }
  const double wait = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.batch.wait_s = wait;
  ++stats_.batches;
  stats_.skipped += result.batch.skipped;
  stats_.samples += result.batch.data.defined() ? result.batch.data.size(0) : 0;
  for (const auto& why : result.batch.skipped_why) {
    if (stats_.skipped_why.size() < LoaderStats::kReasonsKept) stats_.skipped_why.push_back(why);
  }
  stats_.total_wait_s += wait;
  stats_.last_wait_s = wait;
  return std::move(result.batch);
}

LoaderPosition DataLoader::position() const {
  if (!epoch_) return failed_at_;
  std::lock_guard<std::mutex> lock(epoch_->mutex);
  return LoaderPosition{epoch_->number, epoch_->next_deliver};
}

}  // namespace paisoar::data
