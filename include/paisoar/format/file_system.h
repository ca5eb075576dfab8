// FileSystem: every file a checkpoint consists of is written, read, listed
// and removed through this one interface (as LevelDB's Env), so the same
// save and resume code runs on the local disk, in memory, or over a file
// system that fails on purpose (src/format/faulty_file_system.h) in tests
// that need no privileges. Paths are '/'-separated strings; the
// implementations decide what they name.
//   local_file_system()   POSIX: atomic writes through a fsynced temporary
//                         and rename, flock for locks.
//   memory_file_system()  a map in this process; thread-safe; what a test
//                         wants to survive a simulated crash, it keeps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace paisoar::format {

enum class FileKind { Missing, Regular, Directory, Other };

struct FileStatus {
  FileKind kind = FileKind::Missing;
  uint64_t size = 0;  // of a regular file
};

// A file being written so that readers see either nothing or all of it: the
// bytes go to a temporary sibling ("<path>.tmp.<...>", listed like any file
// until commit), which commit() makes durable and renames over `path`.
// Destroying it uncommitted removes the temporary.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Throws c10::Error naming the final path and the reason (e.g. "No space
  // left on device").
  virtual void append(const void* data, size_t size) = 0;
  void append(const std::string& text) { append(text.data(), text.size()); }
  // REQUIRES: not yet committed. Throws like append; then nothing was renamed.
  virtual void commit() = 0;
};

// A regular file open for reading from its start.
class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  virtual uint64_t size() const = 0;
  // Up to `size` bytes from the current position into `out`; fewer only at
  // the end of the file. Throws c10::Error naming the file on a read error.
  virtual size_t read(void* out, size_t size) = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Throws c10::Error naming the directory when the file cannot be created
  // (missing or unwritable directory).
  virtual std::unique_ptr<WritableFile> create_atomically(const std::string& path) = 0;
  // Throws c10::Error naming `path` and `what` ("checkpoint file") when it is
  // missing or unreadable, and c10::ValueError when it is not a regular file
  // (a FIFO or device is refused, never waited on).
  virtual std::unique_ptr<ReadableFile> open(const std::string& path, const std::string& what) = 0;
  // Symbolic links followed: a dangling one is Other.
  virtual FileStatus status(const std::string& path) = 0;
  // The names in `dir` (not paths), sorted; empty when it is missing.
  virtual std::vector<std::string> list(const std::string& dir) = 0;
  // Throws c10::Error naming the directory when it cannot be created.
  virtual void create_directories(const std::string& dir) = 0;
  // Removes a file, or a directory with everything under it; nothing when it
  // is missing. Throws c10::Error naming the path when it cannot.
  virtual void remove_all(const std::string& path) = 0;
  // An exclusive lock on the file `path` (created if missing), held by this
  // process while the handle lives and dropped when the process dies; null
  // when another holder has it, with what that holder wrote into it (e.g. its
  // process id) in *holder. Throws c10::Error naming `path` when it cannot be
  // opened.
  virtual std::shared_ptr<const void> try_lock(const std::string& path, std::string* holder) = 0;
};

std::shared_ptr<FileSystem> local_file_system();
std::shared_ptr<FileSystem> memory_file_system();

// The whole file (regular, at most max_bytes, else c10::ValueError).
std::string read_file(FileSystem& fs, const std::string& path, const std::string& what,
                      uint64_t max_bytes = UINT64_MAX);
// Reads exactly `size` bytes; false if the file ends first.
bool read_exactly(ReadableFile& file, void* out, size_t size);
// The regular files under <root>/<subdir>, recursively, as '/'-separated paths
// relative to root, and in *other the entries that are neither a regular file
// nor a directory (a dangling link, a FIFO).
std::vector<std::string> regular_files_under(FileSystem& fs, const std::string& root, const std::string& subdir,
                                             std::vector<std::string>* other);

}  // namespace paisoar::format
