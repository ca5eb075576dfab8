// AtomicFile on POSIX: open(O_EXCL) a "<name>.tmp.<pid>.<counter>" sibling,
// write(2) in a loop, fsync, rename(2), then fsync the directory so the rename
// itself survives a crash. Test-only fault points (src/util/fault_point.h):
// atomic_file.created, atomic_file.written:<bytes so far>, atomic_file.synced
// (before the rename), atomic_file.renamed (before the directory fsync); and
// system calls a test can fail with an errno: atomic_file.open,
// atomic_file.write:<bytes after the write>, atomic_file.fsync:<bytes>.
#include "src/util/atomic_file.h"

#include <c10/util/Exception.h>

#include "src/util/fault_point.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace paisoar::util {
namespace {

std::string directory_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string unique_temp_name(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), temp_path_(unique_temp_name(path_)) {
  const int injected = fault_error("atomic_file.open", 0);
  fd_ = injected ? -1 : ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    const int error = injected ? injected : errno;
    C10_THROW_ERROR(Error, "cannot create a file in '" + directory_of(path_) + "' (for '" + path_ +
                             "'): " + std::strerror(error) +
                             "; check that the directory exists and is writable");
  }
  try {
    fault_point("atomic_file.created", 0);
  } catch (...) {  // an injected failure: leave nothing behind, as the destructor would
    ::close(fd_);
    ::unlink(temp_path_.c_str());
    throw;
  }
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  ::unlink(temp_path_.c_str());
}

void AtomicFile::fail(const std::string& what, int error) const {
  C10_THROW_ERROR(Error, "cannot write '" + path_ + "': " + what + ": " + std::strerror(error));
}

void AtomicFile::write(const void* data, size_t size) {
  if (const int error = fault_error("atomic_file.write", static_cast<int64_t>(written_ + size))) {
    fail("write failed", error);
  }
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed", errno);
    }
    p += n;
    size -= static_cast<size_t>(n);
    written_ += static_cast<uint64_t>(n);
  }
  fault_point("atomic_file.written", static_cast<int64_t>(written_));
}

void AtomicFile::commit() {
  if (const int error = fault_error("atomic_file.fsync", static_cast<int64_t>(written_))) fail("fsync failed", error);
  if (::fsync(fd_) != 0) fail("fsync failed", errno);
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("close failed", errno);
  }
  fd_ = -1;
  fault_point("atomic_file.synced", 0);
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail("rename from '" + temp_path_ + "' failed", errno);
  committed_ = true;
  fault_point("atomic_file.renamed", 0);
  // Best effort: some file systems refuse fsync on a directory.
  const int dir = ::open(directory_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace paisoar::util
