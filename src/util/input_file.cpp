// InputFile: open(O_NONBLOCK) so that a FIFO cannot block, fstat, refuse
// what is not a regular file, then clear O_NONBLOCK for ordinary reads.
#include "src/util/input_file.h"

#include <c10/util/Exception.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace paisoar::util {
namespace {

[[noreturn]] void not_regular(const std::string& path, const std::string& what, unsigned mode) {
  C10_THROW_ERROR(ValueError, what + " '" + path + "' is " + file_kind(mode) +
                                  ", not a regular file; give the path of a regular file (a FIFO or device "
                                  "would block or never end)");
}

}  // namespace

std::string file_kind(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

InputFile::InputFile(const std::string& path, const std::string& what) : path_(path), what_(what) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd_ < 0) {
    const int error = errno;
    C10_THROW_ERROR(Error, "cannot open the " + what + " '" + path + "': " + std::strerror(error) +
                               (error == ENOENT ? "; check the path" : error == EACCES ? "; check its permissions" : ""));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const unsigned mode = st.st_mode;
    ::close(fd_);
    fd_ = -1;
    not_regular(path, what, mode);
  }
  size_ = static_cast<uint64_t>(st.st_size);
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

int InputFile::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

bool InputFile::fill() {
  if (at_end_) return false;
  if (buffer_at_ > 0) {
    buffer_.erase(0, buffer_at_);
    buffer_at_ = 0;
  }
  char chunk[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) C10_THROW_ERROR(Error, "cannot read the " + what_ + " '" + path_ + "': " + std::strerror(errno));
    if (n == 0) {
      at_end_ = true;
      return false;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }
}

bool InputFile::read_line(std::string& line, size_t max_line, bool* cut) {
  line.clear();
  *cut = false;
  while (true) {
    const size_t newline = buffer_.find('\n', buffer_at_);
    const size_t end = newline == std::string::npos ? buffer_.size() : newline;
    const size_t room = max_line - line.size();
    const size_t take = std::min(room, end - buffer_at_);
    line.append(buffer_, buffer_at_, take);
    if (end - buffer_at_ > take) *cut = true;
    if (newline != std::string::npos) {
      buffer_at_ = newline + 1;
      return true;
    }
    buffer_at_ = buffer_.size();
    if (!fill()) return !line.empty() || *cut;
  }
}

template <typename Bytes>
void InputFile::read_rest(Bytes& out, uint64_t max_bytes) {
  if (size_ > max_bytes) {
    C10_THROW_ERROR(ValueError, "the " + what_ + " '" + path_ + "' holds " + std::to_string(size_) +
                                    " bytes, more than the " + std::to_string(max_bytes) +
                                    " such a file can sensibly hold; check that it is the right file");
  }
  out.reserve(static_cast<size_t>(size_));
  char chunk[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) C10_THROW_ERROR(Error, "cannot read the " + what_ + " '" + path_ + "': " + std::strerror(errno));
    if (n == 0) break;
    if (out.size() + static_cast<uint64_t>(n) > max_bytes) {
      C10_THROW_ERROR(ValueError, "the " + what_ + " '" + path_ + "' grew past " + std::to_string(max_bytes) +
                                      " bytes while it was read; check that it is the right file");
    }
    out.insert(out.end(), chunk, chunk + n);
  }
}

std::string InputFile::read_all(uint64_t max_bytes) {
  std::string out;
  read_rest(out, max_bytes);
  return out;
}

std::vector<uint8_t> InputFile::read_all_bytes(uint64_t max_bytes) {
  std::vector<uint8_t> out;
  read_rest(out, max_bytes);
  return out;
}

void require_regular_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int error = errno;
    C10_THROW_ERROR(Error, "cannot open the " + what + " '" + path + "': " + std::strerror(error) +
                               (error == ENOENT ? "; check the path" : ""));
  }
  if (!S_ISREG(st.st_mode)) not_regular(path, what, st.st_mode);
}

}  // namespace paisoar::util
