// DataLoader: every sample exactly once per epoch across ranks and workers,
// the same batches for 0, 1 and 8 workers, reshuffling, drop_last, exact
// mid-epoch resume, and each kind of bad sample (raise, skip, label out of
// range, shape mismatch, a foreign exception) without hanging a thread.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>

#include "paisoar/data/data_error.h"
#include "paisoar/data/data_loader.h"
#include "tests/support/expect_error.h"

using namespace paisoar::data;
using paisoar::testing::expect_error_of;

namespace {

// Sample i is [i, r] where r comes from the sample's rng (an "augmentation"),
// label i % 10. Indices in `bad` raise DataError, `foreign` a logic_error.
class CountingDataset : public Dataset {
 public:
  explicit CountingDataset(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  Example get(int64_t index, SampleRng& rng) const override {
    if (bad.count(index)) throw DataError(describe(index) + ": corrupt");
    if (foreign.count(index)) throw std::logic_error("not a data error");
    if (slow_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms));
    ++reads;
    if (index == odd_shape) return Example{torch::zeros({3}, torch::kLong), 0};
    const auto r = static_cast<int64_t>(rng.next_u64() % 1000);
    return Example{torch::tensor({index, r}, torch::kLong), label_override >= 0 ? label_override : index % 10};
  }
  int64_t num_classes() const override { return 10; }
  std::string describe(int64_t index) const override { return "counting record " + std::to_string(index); }

  std::set<int64_t> bad, foreign;
  int64_t odd_shape = -1;
  int64_t label_override = -1;
  int slow_ms = 0;
  mutable std::atomic<int64_t> reads{0};

 private:
  int64_t n_;
};

DataLoaderOptions options(int64_t batch, int64_t workers, int64_t rank = 0, int64_t world = 1) {
  DataLoaderOptions o;
  o.batch_size = batch;
  o.workers = workers;
  o.rank = rank;
  o.world_size = world;
  o.seed = 42;
  return o;
}

std::vector<Batch> whole_epoch(DataLoader& loader, int64_t epoch) {
  loader.start_epoch(epoch);
  std::vector<Batch> out;
  while (auto b = loader.next()) out.push_back(std::move(*b));
  return out;
}

void expect_same(const std::vector<Batch>& a, const std::vector<Batch>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::equal(a[i].data, b[i].data)) << "batch " << i;
    EXPECT_TRUE(torch::equal(a[i].labels, b[i].labels)) << "batch " << i;
  }
}

}  // namespace

TEST(DataLoader, EverySampleOncePerEpochAcrossRanksAndWorkers) {
  auto ds = std::make_shared<CountingDataset>(103);
  for (int64_t world : {1, 2, 4}) {
    for (int64_t workers : {0, 1, 3}) {
      std::multiset<int64_t> seen;
      int64_t steps = -1;
      for (int64_t rank = 0; rank < world; ++rank) {
        DataLoader loader(ds, options(8, workers, rank, world));
        const auto batches = whole_epoch(loader, 2);
        if (steps < 0) steps = static_cast<int64_t>(batches.size());
        EXPECT_EQ(static_cast<int64_t>(batches.size()), steps) << "ranks take the same steps";
        EXPECT_EQ(steps, loader.batches_per_epoch());
        for (const auto& b : batches) {
          EXPECT_TRUE(torch::equal(b.indices, b.data.select(1, 0)));
          EXPECT_TRUE(torch::equal(b.labels, b.indices % 10));
          for (int64_t i = 0; i < b.indices.size(0); ++i) seen.insert(b.indices[i].item<int64_t>());
        }
      }
      const int64_t per_rank = (103 + world - 1) / world;
      EXPECT_EQ(static_cast<int64_t>(seen.size()), per_rank * world);
      for (int64_t i = 0; i < 103; ++i) {
        EXPECT_GE(seen.count(i), 1u) << "sample " << i << " world " << world;
        EXPECT_LE(seen.count(i), 2u) << "only padding repeats";
      }
      if (world == 1) EXPECT_EQ(static_cast<int64_t>(seen.size()), 103);
    }
  }
}

TEST(DataLoader, SameBatchesForAnyNumberOfWorkers) {
  auto ds = std::make_shared<CountingDataset>(200);
  DataLoader one(ds, options(16, 1)), eight(ds, options(16, 8)), inline_(ds, options(16, 0));
  const auto a = whole_epoch(one, 1);
  expect_same(a, whole_epoch(eight, 1));
  expect_same(a, whole_epoch(inline_, 1));
  // Another epoch is another order and other augmentations.
  const auto b = whole_epoch(one, 2);
  EXPECT_FALSE(torch::equal(a[0].data, b[0].data));
}

TEST(DataLoader, DropLastAndPartialBatch) {
  auto ds = std::make_shared<CountingDataset>(50);
  DataLoader keep(ds, options(16, 2));
  auto batches = whole_epoch(keep, 0);
  ASSERT_EQ(batches.size(), 4u);
  EXPECT_EQ(batches.back().data.size(0), 2);
  auto o = options(16, 2);
  o.drop_last = true;
  DataLoader drop(ds, o);
  batches = whole_epoch(drop, 0);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(drop.batches_per_epoch(), 3);
}

TEST(DataLoader, ResumeMidEpochContinuesExactly) {
  auto ds = std::make_shared<CountingDataset>(97);
  DataLoader reference(ds, options(5, 3));
  const auto full = whole_epoch(reference, 4);
  DataLoader first(ds, options(5, 2));
  first.start_epoch(4);
  for (int i = 0; i < 7; ++i) first.next();
  const LoaderPosition saved = first.position();
  EXPECT_EQ(saved.epoch, 4);
  EXPECT_EQ(saved.batch, 7);
  DataLoader resumed(ds, options(5, 4));
  resumed.set_position(saved);
  std::vector<Batch> rest;
  while (auto b = resumed.next()) rest.push_back(std::move(*b));
  expect_same(std::vector<Batch>(full.begin() + 7, full.end()), rest);
  EXPECT_EQ(rest.front().index, 7);
  EXPECT_THROW(resumed.start_epoch(0, 1000), c10::ValueError);
}

TEST(DataLoader, BadSampleRaisesNamingItAndStopsCleanly) {
  auto ds = std::make_shared<CountingDataset>(64);
  ds->bad = {37};
  for (int64_t workers : {0, 4}) {
    DataLoader loader(ds, options(8, workers));
    loader.start_epoch(0);
    expect_error_of<DataError>([&] { while (loader.next()) {} }, {"counting record 37", "corrupt"});
    // next() does not silently start over at epoch 0.
    expect_error_of<c10::Error>([&] { loader.next(); }, {"the epoch stopped on an error"});
    // The loader is usable afterwards (a new epoch starts fresh workers).
    ds->bad.clear();
    EXPECT_EQ(whole_epoch(loader, 1).size(), 8u);
    ds->bad = {37};
  }
}

TEST(DataLoader, SkipDropsAndCountsBadSamples) {
  auto ds = std::make_shared<CountingDataset>(40);
  ds->bad = {3, 17, 18};
  auto o = options(10, 3);
  o.on_error = OnError::Skip;
  o.shuffle = false;
  DataLoader loader(ds, o);
  const auto batches = whole_epoch(loader, 0);
  int64_t total = 0;
  for (const auto& b : batches) total += b.data.size(0);
  EXPECT_EQ(total, 37);
  EXPECT_EQ(batches[0].skipped, 1);
  EXPECT_EQ(batches[1].skipped, 2);
  EXPECT_EQ(loader.stats().skipped, 3);
  // A batch with no good sample at all is an error, not an empty batch.
  ds->bad = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
  loader.start_epoch(0);
  loader.next();
  expect_error_of<DataError>([&] { loader.next(); }, {"every sample of batch 1", "counting record 10"});
}

TEST(DataLoader, LabelOutOfRangeShapeMismatchAndForeignErrors) {
  auto ds = std::make_shared<CountingDataset>(20);
  ds->label_override = 12;
  DataLoader labels(ds, options(4, 2));
  expect_error_of<DataError>([&] { labels.next(); }, {"label 12", "outside [0, 10)", "counting record"});
  ds->label_override = -1;
  ds->odd_shape = 5;
  auto o = options(20, 2);
  o.shuffle = false;
  DataLoader shapes(ds, o);
  expect_error_of<DataError>([&] { shapes.next(); }, {"counting record 5", "[3]", "[2]"});
  ds->odd_shape = -1;
  ds->foreign = {0, 1, 2, 3};
  DataLoader foreign(ds, options(4, 2));
  EXPECT_THROW(while (foreign.next()) {}, std::logic_error);
}

TEST(DataLoader, PrefetchIsBoundedAndShutdownJoinsBusyWorkers) {
  auto ds = std::make_shared<CountingDataset>(1000);
  auto o = options(4, 2);
  o.prefetch_factor = 2;
  {
    DataLoader loader(ds, o);
    loader.next();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // 1 delivered + at most workers * prefetch_factor batches ahead.
    EXPECT_LE(ds->reads.load(), 4 * (1 + 2 * 2));
    ds->slow_ms = 5;
  }  // destroyed while workers are mid-batch: must join, not hang or crash
  SUCCEED();
}

TEST(DataLoader, ReportsWaitPerBatchAndRejectsBadOptions) {
  auto ds = std::make_shared<CountingDataset>(30);
  DataLoader loader(ds, options(10, 2));
  double sum = 0;
  for (const auto& b : whole_epoch(loader, 0)) {
    EXPECT_GE(b.wait_s, 0.0);
    sum += b.wait_s;
  }
  EXPECT_DOUBLE_EQ(loader.stats().total_wait_s, sum);
  EXPECT_EQ(loader.stats().batches, 3);
  EXPECT_THROW(DataLoader(ds, options(0, 1)), c10::ValueError);
  EXPECT_THROW(DataLoader(ds, options(4, -1)), c10::ValueError);
  EXPECT_THROW(DataLoader(ds, options(4, 1, 3, 2)), c10::ValueError);
}
