// AtomicFile: write a file so that readers see either nothing or all of it. The
// bytes go to a temporary file in the same directory (unique per process and
// call), which commit() fsyncs and renames over the final path; destroying an
// uncommitted AtomicFile removes the temporary. Plain POSIX, no LibTorch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace paisoar::util {

class AtomicFile {
 public:
  // Creates the temporary file next to `path`. Throws c10::Error
  // naming the directory if it cannot (missing, not writable).
  explicit AtomicFile(std::string path);
  ~AtomicFile();  // uncommitted: closes and removes the temporary
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Appends `size` bytes. Throws c10::Error naming the final path (and
  // e.g. "No space left on device") on failure.
  void write(const void* data, size_t size);
  void write(const std::string& text) { write(text.data(), text.size()); }
  uint64_t bytes_written() const { return written_; }

  // fsync, rename to the final path, fsync the directory. REQUIRES: not yet
  // committed. After it, the object owns nothing.
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return temp_path_; }

 private:
  [[noreturn]] void fail(const std::string& what, int error) const;

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  uint64_t written_ = 0;
  bool committed_ = false;
};

}  // namespace paisoar::util
