// RankScratchDir: mkdtemp, fresh per-rank paths, recursive removal.
#include "launch/rank_scratch_dir.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace paisoar::launch {

RankScratchDir::RankScratchDir() {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string pattern = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
  pattern += "/paisoar_launch.XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("paisoar launch: cannot create a private directory '" + pattern +
                             "' for the ranks' heartbeat and error files: " + std::strerror(errno) +
                             "; set TMPDIR to a writable directory");
  }
  path_ = pattern;
}

RankScratchDir::~RankScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string RankScratchDir::fresh_file(int global_rank, const std::string& suffix) const {
  const std::string file = path_ + "/rank_" + std::to_string(global_rank) + "." + suffix;
  ::unlink(file.c_str());
  return file;
}

}  // namespace paisoar::launch
