// Test support for the record-shard suites: a shard file written from records.
#pragma once

#include <string>
#include <vector>

#include "paisoar/data/record_shards.h"

namespace paisoar::testing {

inline void write_shard(const std::string& path, const std::vector<data::Record>& records) {
  data::ShardWriter writer(path);
  for (const auto& r : records) writer.add(r);
  writer.finish();
}

}  // namespace paisoar::testing
