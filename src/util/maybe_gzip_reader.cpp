// A member is inflated with windowBits 16+15 (gzip only); at Z_STREAM_END zlib
// has checked its trailer. Bytes after a member must start another one.
#include "src/util/maybe_gzip_reader.h"

#include <c10/util/Exception.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "src/util/input_file.h"

namespace paisoar::util {
namespace {

constexpr size_t kChunk = 1 << 16;

}  // namespace

MaybeGzipReader::MaybeGzipReader(const std::string& path, const std::string& what)
    : file_(std::make_unique<InputFile>(path, what)), path_(path), what_(what) {
  in_.reserve(kChunk);
  refill();
  gzipped_ = in_.size() >= 2 && in_[0] == 0x1f && in_[1] == 0x8b;
  if (gzipped_) {
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) fail("cannot start zlib (out of memory?)");
    z_.next_in = in_.data();
    z_.avail_in = static_cast<uInt>(in_.size());
    member_open_ = true;
  }
}

MaybeGzipReader::~MaybeGzipReader() {
  if (gzipped_) inflateEnd(&z_);
}

uint64_t MaybeGzipReader::file_bytes() const { return file_->size(); }

void MaybeGzipReader::fail(const std::string& why) const {
  C10_THROW_ERROR(Error, "the " + what_ + " '" + path_ + "': " + why);
}

bool MaybeGzipReader::refill() {
  in_.resize(kChunk);
  ssize_t n;
  do {
    n = ::read(file_->fd(), in_.data(), in_.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) fail(std::string("cannot read it: ") + std::strerror(errno));
  in_.resize(static_cast<size_t>(n));
  in_at_ = 0;
  return n > 0;
}

uint64_t MaybeGzipReader::inflate_into(uint8_t* out, uint64_t bytes) {
  uint64_t produced = 0;
  while (produced < bytes) {
    if (!member_open_) {
      // Between members: more input starts another, or the stream has ended.
      if (z_.avail_in == 0 && !refill()) return produced;
      if (z_.avail_in == 0) z_.next_in = in_.data(), z_.avail_in = static_cast<uInt>(in_.size());
      if (inflateReset(&z_) != Z_OK) fail("cannot restart zlib");
      member_open_ = true;
    }
    if (z_.avail_in == 0) {
      if (!refill()) fail("truncated gzip data (the file ends inside a gzip member): download or convert it again");
      z_.next_in = in_.data();
      z_.avail_in = static_cast<uInt>(in_.size());
    }
    const auto want = static_cast<uInt>(std::min<uint64_t>(bytes - produced, 1u << 30));
    z_.next_out = out + produced;
    z_.avail_out = want;
    const int ret = inflate(&z_, Z_NO_FLUSH);
    produced += want - z_.avail_out;
    if (ret == Z_STREAM_END) {
      member_open_ = false;
    } else if (ret != Z_OK && !(ret == Z_BUF_ERROR && z_.avail_in == 0)) {
      fail(std::string("corrupt gzip data (") + (z_.msg ? z_.msg : "zlib error " + std::to_string(ret)) +
           "): download or convert it again");
    }
  }
  return produced;
}

bool MaybeGzipReader::read(void* out, uint64_t bytes) {
  auto* to = static_cast<uint8_t*>(out);
  if (gzipped_) return inflate_into(to, bytes) == bytes;
  while (bytes > 0) {
    if (in_at_ == in_.size() && !refill()) return false;
    const size_t take = std::min<uint64_t>(bytes, in_.size() - in_at_);
    std::memcpy(to, in_.data() + in_at_, take);
    in_at_ += take;
    to += take;
    bytes -= take;
  }
  return true;
}

bool MaybeGzipReader::at_end() {
  uint8_t extra;
  return !read(&extra, 1) && !member_open_;
}

}  // namespace paisoar::util
