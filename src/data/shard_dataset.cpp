// ShardDataset: the manifest and every shard's index are loaded at open; get()
// finds the shard by binary search over the first global index of each, reads
// the payload (CRC-checked) and decodes it with the ImagePipeline.
#include "paisoar/data/shard_dataset.h"
#include "paisoar/error.h"

#include <algorithm>

#include "paisoar/data/data_error.h"

namespace paisoar::data {

ShardDataset::ShardDataset(const std::string& dir, ImagePipeline pipeline)
    : manifest_(read_manifest(dir)), pipeline_(std::move(pipeline)) {
  for (size_t s = 0; s < manifest_.shards.size(); ++s) {
    auto reader = std::make_unique<ShardReader>(dir + "/" + manifest_.shards[s]);
    if (reader->size() != manifest_.records[s]) {
      throw DataError("shard '" + reader->path() + "' holds " + std::to_string(reader->size()) +
                      " records but '" + dir + "/dataset.json' says " + std::to_string(manifest_.records[s]) +
                      "; the data set is inconsistent: re-run paisoar convert");
    }
    for (int64_t i = 0; i < reader->size(); ++i) {
      if (reader->entry(i).label < 0) {
        throw DataError("shard '" + reader->path() + "' record " + std::to_string(i) + " (key " +
                        reader->entry(i).key + ") has label " + std::to_string(reader->entry(i).label) +
                        "; labels must be >= 0: re-run paisoar convert");
      }
    }
    starts_.push_back(total_);
    total_ += reader->size();
    shards_.push_back(std::move(reader));
  }
}

std::pair<const ShardReader*, int64_t> ShardDataset::locate(int64_t index) const {
  if (index < 0 || index >= total_) {
    C10_THROW_ERROR(IndexError, "ShardDataset: index " + std::to_string(index) + " is outside [0, " +
                            std::to_string(total_) + ")");
  }
  // The last shard starting at or before `index`; empty shards share a start
  // with the next one and are skipped by upper_bound.
  const auto s = std::upper_bound(starts_.begin(), starts_.end(), index) - starts_.begin() - 1;
  return {shards_[static_cast<size_t>(s)].get(), index - starts_[static_cast<size_t>(s)]};
}

Example ShardDataset::get(int64_t index, SampleRng& rng) const {
  const auto [shard, i] = locate(index);
  const std::vector<uint8_t> payload = shard->read(i);  // its DataError names shard, record and key
  Example example;
  try {
    example.data = pipeline_(payload.data(), payload.size(), rng);
  } catch (const DataError& e) {
    throw DataError(describe(index) + ": " + error_text(e));
  }
  example.label = shard->entry(i).label;
  return example;
}

std::string ShardDataset::describe(int64_t index) const {
  const auto [shard, i] = locate(index);
  return shard->path() + " record " + std::to_string(i) + " (key " + shard->entry(i).key + ")";
}

}  // namespace paisoar::data
