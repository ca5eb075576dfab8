// Record shards: the "convert once, stop re-decoding every epoch" format.
// A shard is a plain POSIX tar file in WebDataset's layout, so `tar`, Python's
// tarfile and the webdataset library read it: each record is the members
// `<key>.<ext>` (the sample: jpg, png, or raw pgm/ppm) and `<key>.cls` (the
// label as decimal text). Next to it, `<shard>.idx` is a tab-separated index
// (key, label, payload offset, payload size, CRC-32, ext) for random access
// and integrity. A data set directory holds the shards and `dataset.json`
// (classes and shard list), written last, so its presence means "complete".
// Plain C++ (no LibTorch).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace paisoar::data {

struct Record {
  std::string key;    // unique in the shard; [A-Za-z0-9_-], no dots
  int64_t label = 0;
  std::string ext;    // "jpg", "png", "pgm", "ppm"
  std::vector<uint8_t> payload;
};

struct ShardIndexEntry {
  std::string key;
  int64_t label = 0;
  uint64_t offset = 0;  // of the payload inside the tar
  uint64_t size = 0;
  uint32_t crc32 = 0;   // zlib's CRC-32 of the payload
  std::string ext;
};

// Writes one shard (tar + .idx). Nothing appears at `tar_path` until finish():
// both files are written under temporary names, fsynced and renamed, so a
// crash never leaves a half-written shard. Not thread-safe; one per thread.
class ShardWriter {
 public:
  explicit ShardWriter(std::string tar_path);
  ~ShardWriter();  // without finish(): removes the temporary files
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;

  void add(const Record& record);
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Random access to one shard's records through its index. Thread-safe: reads
// use pread on one descriptor. Opening checks the index against the tar's
// size, so a truncated shard is reported at once.
class ShardReader {
 public:
  // Throws DataError naming the file if the tar or its .idx is missing,
  // malformed, or shorter than the index says.
  explicit ShardReader(std::string tar_path);
  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;

  int64_t size() const;
  const ShardIndexEntry& entry(int64_t i) const;
  // The payload of record i, CRC-checked. Throws DataError naming the shard,
  // the record number and key on a short read or checksum mismatch.
  std::vector<uint8_t> read(int64_t i) const;
  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// dataset.json
struct ShardManifest {
  std::vector<std::string> classes;  // label i is classes[i]
  std::vector<std::string> shards;   // tar file names, relative to the directory
  std::vector<int64_t> records;      // per shard
};
void write_manifest(const std::string& dir, const ShardManifest& manifest);  // atomic
// Throws DataError if missing ("run paisoar convert first") or malformed.
ShardManifest read_manifest(const std::string& dir);

}  // namespace paisoar::data
