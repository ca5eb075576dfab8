// ShardReader: loads `<tar>.idx`, checks that every record (payload and label
// member) and the end-of-archive marker lie inside the tar, then serves
// payloads with pread(2) on one descriptor and verifies their CRC-32.
#include <fcntl.h>

#include <c10/util/Exception.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "paisoar/data/data_error.h"
#include "paisoar/data/record_shards.h"
#include "src/data/shard_index.h"
#include "src/data/ustar.h"
#include "paisoar/error.h"
#include "src/util/input_file.h"
#include "src/util/text_check.h"

namespace paisoar::data {
namespace {

constexpr const char* kRerun = "re-run paisoar convert to rebuild the data set";

// An index line is under 200 bytes; 1 GiB is millions of records past any shard.
constexpr uint64_t kMaxIndexBytes = uint64_t{1} << 30;

std::string read_index_file(const std::string& path, const std::string& tar_path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw DataError("shard '" + tar_path + "' has no index '" + path + "'; the conversion did not finish: " + kRerun);
  }
  try {
    return util::InputFile(path, "shard index").read_all(kMaxIndexBytes);
  } catch (const c10::Error& e) {
    throw DataError(error_text(e) + "; " + kRerun);
  }
}

std::string hex32(uint32_t v) {
  char s[9];
  std::snprintf(s, sizeof(s), "%08x", v);
  return s;
}

}  // namespace

struct ShardReader::Impl {
  std::string path;
  int fd = -1;
  std::vector<ShardIndexEntry> entries;

  ~Impl() {
    if (fd >= 0) ::close(fd);
  }
  std::string where(int64_t i) const {
    return "shard '" + path + "' record " + std::to_string(i) + " (key " + entries[static_cast<size_t>(i)].key + ")";
  }
};

ShardReader::ShardReader(std::string tar_path) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.path = std::move(tar_path);
  uint64_t file_size = 0;
  try {
    util::InputFile shard(s.path, "shard");  // a FIFO or device is refused, not read
    file_size = shard.size();
    s.fd = shard.release();
  } catch (const c10::Error& e) {
    throw DataError(error_text(e) + "; check the path, or " + kRerun);
  }
  const std::string idx_path = index_path_of(s.path);
  s.entries = parse_index(read_index_file(idx_path, s.path), idx_path);
  // Where the writer puts record i's members: the payload's header sits just
  // before `offset`; the label member follows the padded payload.
  uint64_t end = 0;
  for (size_t i = 0; i < s.entries.size(); ++i) {
    const ShardIndexEntry& e = s.entries[i];
    const uint64_t label_bytes = std::to_string(e.label).size();
    // Bounded first, so the sums below cannot wrap around.
    if (e.offset > file_size || e.size > file_size) {
      throw DataError("shard '" + s.path + "' is truncated or its index damaged: record " + std::to_string(i) +
                      " (key " + e.key + ") has offset " + std::to_string(e.offset) + " and size " +
                      std::to_string(e.size) + " but the file has " + std::to_string(file_size) + " bytes; " +
                      kRerun);
    }
    if (e.offset < end + ustar::kBlock || e.offset % ustar::kBlock != 0) {
      throw DataError("shard index '" + idx_path + "': record " + std::to_string(i) + " (key " + e.key +
                      ") has offset " + std::to_string(e.offset) +
                      ", which does not follow the previous record; " + kRerun);
    }
    end = e.offset + ustar::padded(e.size) + ustar::kBlock + ustar::padded(label_bytes);
    if (end > file_size) {
      throw DataError("shard '" + s.path + "' is truncated: record " + std::to_string(i) + " (key " +
                      e.key + ") ends at byte " + std::to_string(end) + " but the file has " +
                      std::to_string(file_size) + " bytes; " + kRerun);
    }
  }
  if (end + ustar::kEndOfArchive > file_size) {
    throw DataError("shard '" + s.path + "' is truncated after its last record (" +
                    std::to_string(file_size) + " bytes, expected " +
                    std::to_string(end + ustar::kEndOfArchive) + "); " + kRerun);
  }
}

ShardReader::~ShardReader() = default;

int64_t ShardReader::size() const { return static_cast<int64_t>(impl_->entries.size()); }

const ShardIndexEntry& ShardReader::entry(int64_t i) const {
  if (i < 0 || i >= size()) {
    C10_THROW_ERROR(IndexError, "record " + std::to_string(i) + " of shard '" + impl_->path +
                            "', which has " + std::to_string(size()));
  }
  return impl_->entries[static_cast<size_t>(i)];
}

std::vector<uint8_t> ShardReader::read(int64_t i) const {
  const ShardIndexEntry& e = entry(i);
  // The payload and, one header block after its padding, the label member:
  // read together so that the index's label is checked against the shard's.
  const std::string label = std::to_string(e.label);
  const uint64_t label_at = ustar::padded(e.size) + ustar::kBlock;
  const uint64_t span = label_at + label.size();
  std::vector<uint8_t> payload(span);
  uint64_t done = 0;
  while (done < span) {
    const ssize_t n = ::pread(impl_->fd, payload.data() + done, span - done, static_cast<off_t>(e.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw DataError(impl_->where(i) + ": short read at byte " + std::to_string(e.offset + done) +
                      (n < 0 ? std::string(" (") + std::strerror(errno) + ")" : " (file truncated)") +
                      "; " + kRerun);
    }
    done += static_cast<uint64_t>(n);
  }
  const auto crc = static_cast<uint32_t>(::crc32_z(::crc32_z(0L, Z_NULL, 0), payload.data(), e.size));
  if (crc != e.crc32) {
    throw DataError(impl_->where(i) + ": CRC-32 mismatch (index " + hex32(e.crc32) + ", payload " +
                    hex32(crc) + "): the file is corrupt; " + kRerun);
  }
  const std::string stored(reinterpret_cast<const char*>(payload.data() + label_at), label.size());
  if (stored != label) {
    throw DataError(impl_->where(i) + ": the index gives label " + label + " but the shard's label member holds " +
                    util::shown(stored) + ": the index or the shard is damaged; " + kRerun);
  }
  payload.resize(e.size);
  return payload;
}

const std::string& ShardReader::path() const { return impl_->path; }

}  // namespace paisoar::data
