// Opening a file a user named: never blocks on a FIFO, a socket or a device
// (the open is non-blocking, then fstat decides), and refuses what is not a
// regular file with a message naming the path, its kind and what to do.
// Plain POSIX, no LibTorch; errors are c10::Error (c10::ValueError for a
// file that is not regular or too large).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace paisoar::util {

// An open, regular, readable file; closes on destruction. `what` names the
// file's role in messages ("config file", "metrics file").
class InputFile {
 public:
  InputFile(const std::string& path, const std::string& what);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  // Hands the descriptor to the caller (e.g. gzdopen), who then closes it.
  int release();
  // The whole file. Throws c10::ValueError when it holds more than max_bytes.
  std::string read_all(uint64_t max_bytes = std::numeric_limits<uint64_t>::max());
  std::vector<uint8_t> read_all_bytes(uint64_t max_bytes = std::numeric_limits<uint64_t>::max());
  // The next line, without its '\n', into `line`; false at the end. A line
  // longer than max_line is cut to its first max_line bytes (the rest is read
  // and dropped, so memory stays bounded) and *cut is set.
  bool read_line(std::string& line, size_t max_line, bool* cut);

 private:
  std::string path_;
  std::string what_;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string buffer_;  // read_line's bytes read but not yet returned
  size_t buffer_at_ = 0;
  bool at_end_ = false;
  // Appends up to 64 KiB to buffer_; false at the end of the file.
  bool fill();
  // Reads to the end into `out` (a string or a byte vector).
  template <typename Bytes>
  void read_rest(Bytes& out, uint64_t max_bytes);
};

// The kind of a non-regular file, for messages: "a directory", "a FIFO", ...
std::string file_kind(unsigned mode);

// Throws like InputFile unless `path` names a regular file (symlinks followed).
void require_regular_file(const std::string& path, const std::string& what);

}  // namespace paisoar::util
