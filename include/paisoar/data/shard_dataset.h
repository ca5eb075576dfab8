// A Dataset over a directory of record shards written by `paisoar convert`
// (record_shards.h): random access to every record of every shard, decoded by
// an ImagePipeline (JPEG/PNG through the fused crop-decode, PGM/PPM raw).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "paisoar/data/dataset.h"
#include "paisoar/data/image_pipeline.h"
#include "paisoar/data/record_shards.h"

namespace paisoar::data {

class ShardDataset : public Dataset {
 public:
  // Opens dataset.json and every shard's index (checking sizes). Throws DataError.
  ShardDataset(const std::string& dir, ImagePipeline pipeline);

  int64_t size() const override { return total_; }
  Example get(int64_t index, SampleRng& rng) const override;
  int64_t num_classes() const override { return static_cast<int64_t>(manifest_.classes.size()); }
  std::string describe(int64_t index) const override;

  const ShardManifest& manifest() const { return manifest_; }

 private:
  std::pair<const ShardReader*, int64_t> locate(int64_t index) const;

  ShardManifest manifest_;
  std::vector<std::unique_ptr<ShardReader>> shards_;
  std::vector<int64_t> starts_;  // first global index of each shard
  int64_t total_ = 0;
  ImagePipeline pipeline_;
};

}  // namespace paisoar::data
