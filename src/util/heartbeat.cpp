// Heartbeat: utimensat with the current time; the first beat creates the file.
#include "src/util/heartbeat.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace paisoar::util {

Heartbeat::Heartbeat(std::string path) : path_(std::move(path)) {}

void Heartbeat::beat() {
  if (path_.empty()) return;
  if (::utimensat(AT_FDCWD, path_.c_str(), nullptr, 0) == 0 || errno != ENOENT) return;
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);
}

}  // namespace paisoar::util
