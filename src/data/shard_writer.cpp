// ShardWriter: appends each record to the tar as `<key>.<ext>` then `<key>.cls`
// and remembers its index entry; finish() ends the archive and commits the tar,
// then the index, each through an AtomicFile.
#include <zlib.h>

#include <c10/util/Exception.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_set>

#include "paisoar/data/data_error.h"
#include "paisoar/data/record_shards.h"
#include "src/data/shard_index.h"
#include "src/data/ustar.h"
#include "src/util/atomic_file.h"

namespace paisoar::data {

struct ShardWriter::Impl {
  std::string tar_path;
  std::optional<util::AtomicFile> tar;  // reset once finished
  std::vector<ShardIndexEntry> entries;
  std::unordered_set<std::string> keys;

  void add_member(const std::string& name, const void* data, uint64_t size) {
    const auto header = ustar::member_header(name, size);
    tar->write(header.data(), header.size());
    if (size > 0) tar->write(data, size);
    static const char zeros[ustar::kBlock] = {};
    tar->write(zeros, ustar::padding(size));
  }
};

ShardWriter::ShardWriter(std::string tar_path) : impl_(std::make_unique<Impl>()) {
  impl_->tar_path = std::move(tar_path);
  impl_->tar.emplace(impl_->tar_path);
}

ShardWriter::~ShardWriter() = default;  // an uncommitted AtomicFile removes its temporary

void ShardWriter::add(const Record& record) {
  Impl& s = *impl_;
  if (!s.tar) C10_THROW_ERROR(Error, "ShardWriter::add after finish() for '" + s.tar_path + "'");
  check_record_key(record.key);
  check_record_ext(record.ext);
  const std::string where = "shard '" + s.tar_path + "' record key '" + record.key + "'";
  if (record.label < 0) {
    throw DataError(where + ": label " + std::to_string(record.label) + " is negative; labels are class numbers from 0");
  }
  if (record.payload.size() > ustar::kMaxMemberSize) {
    throw DataError(where + ": payload of " + std::to_string(record.payload.size()) +
                    " bytes is over tar's 8 GiB member limit");
  }
  if (!s.keys.insert(record.key).second) {
    throw DataError(where + ": the key is used twice; keys must be unique within a shard");
  }
  ShardIndexEntry e;
  e.key = record.key;
  e.label = record.label;
  e.ext = record.ext;
  e.size = record.payload.size();
  e.offset = s.tar->bytes_written() + ustar::kBlock;
  e.crc32 = static_cast<uint32_t>(
      ::crc32_z(::crc32_z(0L, Z_NULL, 0), record.payload.data(), record.payload.size()));
  s.add_member(record.key + "." + record.ext, record.payload.data(), record.payload.size());
  const std::string label = std::to_string(record.label);
  s.add_member(record.key + ".cls", label.data(), label.size());
  s.entries.push_back(std::move(e));
}

void ShardWriter::finish() {
  Impl& s = *impl_;
  if (!s.tar) C10_THROW_ERROR(Error, "ShardWriter::finish called twice for '" + s.tar_path + "'");
  static const char zeros[ustar::kEndOfArchive] = {};
  s.tar->write(zeros, sizeof(zeros));
  // The index goes last: a tar without its .idx is reported as incomplete.
  util::AtomicFile idx(index_path_of(s.tar_path));
  idx.write(format_index(s.entries));
  s.tar->commit();
  s.tar.reset();
  idx.commit();
}

}  // namespace paisoar::data
