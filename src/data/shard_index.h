// The text side of a record shard: what a record key and extension may be, and
// the `<shard>.tar.idx` index, a first line `# paisoar-shard-index v1 records=N`
// then one tab-separated line per record: key, label, payload offset, payload
// size, CRC-32 (8 hex digits), extension.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "paisoar/data/record_shards.h"

namespace paisoar::data {

// Longest key: `<key>.<ext>` must fit ustar's 100-byte name field.
constexpr size_t kMaxRecordKey = 90;
constexpr size_t kMaxRecordExt = 8;

// Throw DataError quoting the value unless the key is 1..90 characters of
// [A-Za-z0-9_-] / the extension 1..8 of [a-z0-9].
void check_record_key(const std::string& key);
void check_record_ext(const std::string& ext);

inline std::string index_path_of(const std::string& tar_path) { return tar_path + ".idx"; }

std::string format_index(const std::vector<ShardIndexEntry>& entries);

// Throws DataError naming `idx_path` and the line for anything malformed.
std::vector<ShardIndexEntry> parse_index(const std::string& text, const std::string& idx_path);

}  // namespace paisoar::data
