// Reading a file that may be gzipped (IDX sets come either way): the bytes as
// they are, or inflated when the file starts with gzip's magic. Unlike zlib's
// gzread, which takes a file cut inside its trailer as complete, every member's
// CRC-32 and length are checked and a cut anywhere is an error; finish()
// requires the stream to end there.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace paisoar::util {

class InputFile;

class MaybeGzipReader {
 public:
  // Opens `path` as an InputFile (a FIFO or directory is refused, naming
  // `what`). Errors are c10::Error naming the path.
  MaybeGzipReader(const std::string& path, const std::string& what);
  ~MaybeGzipReader();
  MaybeGzipReader(const MaybeGzipReader&) = delete;
  MaybeGzipReader& operator=(const MaybeGzipReader&) = delete;

  bool gzipped() const { return gzipped_; }
  uint64_t file_bytes() const;
  // Fills out[0, bytes); false (out partly filled) when the data ends first.
  // Throws for damaged gzip data, naming zlib's reason.
  bool read(void* out, uint64_t bytes);
  // True when nothing follows what was read: for gzip, the last member's
  // trailer has been checked and no byte follows it.
  bool at_end();

 private:
  // Refills in_ from the file; false at its end.
  bool refill();
  // Inflates into out[0, bytes) across members; returns the bytes produced.
  uint64_t inflate_into(uint8_t* out, uint64_t bytes);
  [[noreturn]] void fail(const std::string& why) const;

  std::unique_ptr<InputFile> file_;
  std::string path_;
  std::string what_;
  bool gzipped_ = false;
  bool member_open_ = false;  // inside a member: its trailer not yet read
  z_stream z_{};
  std::vector<uint8_t> in_;
  size_t in_at_ = 0;  // plain files: the next byte of in_ to hand out
};

}  // namespace paisoar::util
