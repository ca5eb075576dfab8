// write_shard_set: W threads pull shard numbers from an atomic counter and
// write each with their own ShardWriter. Shared state, all owned by the
// calling function: `next` (atomic), `stop` (atomic), `first_error` (under
// `error_mutex`) and `written` (each element set only by the shard's writer,
// read after join).
#include "src/data/shard_set_writer.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "src/data/shard_index.h"
#include "src/util/progress_bar.h"

namespace paisoar::data {
namespace fs = std::filesystem;

std::string shard_file_name(int64_t shard) {
  char name[32];
  std::snprintf(name, sizeof(name), "shard-%06lld.tar", static_cast<long long>(shard));
  return name;
}

ConvertResult write_shard_set(const std::string& out_dir, int64_t count, std::vector<std::string> classes,
                              const ConvertOptions& options,
                              const std::function<Record(int64_t)>& make_record) {
  if (options.records_per_shard < 1 || options.workers < 1) {
    C10_THROW_ERROR(ValueError, "convert: records per shard (" + std::to_string(options.records_per_shard) +
                                ") and workers (" + std::to_string(options.workers) + ") must be at least 1");
  }
  fs::create_directories(out_dir);
  if (fs::exists(fs::path(out_dir) / "dataset.json")) {
    C10_THROW_ERROR(Error, "'" + out_dir + "' already holds a data set (dataset.json); remove it or "
                             "choose another output directory");
  }
  const int64_t rps = options.records_per_shard;
  const int64_t shards = (count + rps - 1) / rps;
  const auto path_of = [&](int64_t s) { return (fs::path(out_dir) / shard_file_name(s)).string(); };

  std::atomic<int64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex error_mutex;
  std::exception_ptr first_error;
  std::vector<char> written(static_cast<size_t>(shards), 0);
  std::optional<util::ProgressBar> bar;
  if (options.progress) bar.emplace("convert", count);

  const auto work = [&] {
    try {
      for (int64_t s = next++; s < shards && !stop; s = next++) {
        ShardWriter writer(path_of(s));
        for (int64_t i = s * rps; i < std::min(count, (s + 1) * rps); ++i) {
          if (stop) return;  // the writer's destructor removes its temporaries
          writer.add(make_record(i));
          if (bar) bar->advance();
        }
        writer.finish();
        written[static_cast<size_t>(s)] = 1;
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
      stop = true;
    }
  };
  std::vector<std::thread> threads;
  const int64_t nthreads = std::max<int64_t>(1, std::min(options.workers, shards));
  try {
    for (int64_t t = 1; t < nthreads; ++t) threads.emplace_back(work);
  } catch (...) {  // no thread to start: stop those started, join, report
    std::lock_guard<std::mutex> lock(error_mutex);
    if (!first_error) first_error = std::current_exception();
    stop = true;
  }
  work();  // the calling thread is worker 0
  for (auto& t : threads) t.join();

  if (first_error) {
    for (int64_t s = 0; s < shards; ++s) {
      if (!written[static_cast<size_t>(s)]) continue;
      std::error_code ignored;
      fs::remove(path_of(s), ignored);
      fs::remove(index_path_of(path_of(s)), ignored);
    }
    std::rethrow_exception(first_error);
  }

  ShardManifest manifest;
  manifest.classes = std::move(classes);
  ConvertResult result;
  for (int64_t s = 0; s < shards; ++s) {
    manifest.shards.push_back(shard_file_name(s));
    manifest.records.push_back(std::min(count, (s + 1) * rps) - s * rps);
    result.bytes += fs::file_size(path_of(s));
  }
  write_manifest(out_dir, manifest);
  if (bar) bar->finish();
  result.records = count;
  result.shards = shards;
  return result;
}

}  // namespace paisoar::data
