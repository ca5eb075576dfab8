// The parallel half of `paisoar convert`, independent of where records come
// from: records [0, count) go to shards of options.records_per_shard
// (shard s holds [s*R, (s+1)*R)), written by options.workers threads that each
// take whole shards, so the bytes do not depend on the number of workers.
// dataset.json is written last and only if every shard was.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "paisoar/data/convert.h"
#include "paisoar/data/record_shards.h"

namespace paisoar::data {

// `make_record(i)` builds record i; it is called from several threads at once
// (each i once). The first exception from it or from writing stops the other
// workers and is rethrown once all have joined; the shards already written are
// removed and no dataset.json appears. Throws c10::Error if out_dir
// already holds a dataset.json, c10::ValueError for options < 1.
ConvertResult write_shard_set(const std::string& out_dir, int64_t count, std::vector<std::string> classes,
                              const ConvertOptions& options,
                              const std::function<Record(int64_t)>& make_record);

// "shard-000042.tar"
std::string shard_file_name(int64_t shard);

}  // namespace paisoar::data
