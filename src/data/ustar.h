// The POSIX ustar pieces a record shard is made of: a 512-byte member header
// (regular file, mode 0644, owner 0, mtime 0 so the same records always give
// the same bytes), payloads padded to 512 bytes, and two zero blocks at the end.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace paisoar::data::ustar {

constexpr uint64_t kBlock = 512;
// ustar's 11 octal digits of size: members must be smaller than 8 GiB.
constexpr uint64_t kMaxMemberSize = (uint64_t{1} << 33) - 1;

// REQUIRES: name.size() < 100 (no prefix field is used), size <= kMaxMemberSize.
std::array<char, kBlock> member_header(const std::string& name, uint64_t size);

// Bytes of zero padding after a payload of `size` bytes.
inline uint64_t padding(uint64_t size) { return (kBlock - size % kBlock) % kBlock; }
inline uint64_t padded(uint64_t size) { return size + padding(size); }

// The end-of-archive marker's length: two zero blocks.
constexpr uint64_t kEndOfArchive = 2 * kBlock;

}  // namespace paisoar::data::ustar
