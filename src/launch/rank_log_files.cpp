// RankLogFiles: creates the --log_dir directory and the rank_<R>.log files;
// make_temporary_log_dir().
#include "launch/rank_log_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "launch/launch_options.h"

namespace paisoar::launch {

RankLogFiles::RankLogFiles(const std::string& dir, const std::vector<int>& global_ranks) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw LaunchUsageError("paisoar launch: cannot create --log_dir '" + dir + "': " + ec.message() +
                           ". Pick a directory you can write to.");
  }
  for (int rank : global_ranks) {
    std::string path = dir + "/rank_" + std::to_string(rank) + ".log";
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      throw LaunchUsageError("paisoar launch: cannot open log file '" + path + "': " +
                             std::strerror(errno) + ". Pick a --log_dir you can write to.");
    }
    files_.emplace(rank, UniqueFd(fd));
  }
}

std::string make_temporary_log_dir() {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string pattern = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  pattern += "/paisoar_logs.XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("paisoar launch: cannot create a log directory '" + pattern +
                             "' for --redirects/--tee: " + std::strerror(errno) +
                             "; give --log-dir DIR");
  }
  return pattern;
}

int RankLogFiles::fd_for(int global_rank) const {
  auto it = files_.find(global_rank);
  return it == files_.end() ? -1 : it->second.get();
}

}  // namespace paisoar::launch
