// The per-rank log files of --log_dir: <dir>/rank_<R>.log, one per global
// rank of this node, holding that rank's stdout and stderr lines unprefixed.
// Files are truncated when the launcher starts and appended to across restarts.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "launch/unique_fd.h"

namespace paisoar::launch {

class RankLogFiles {
 public:
  // No log files: fd_for() is always -1.
  RankLogFiles() = default;

  // Creates `dir` (and its parents) and opens one file per rank. Throws
  // LaunchUsageError (launch_options.h: the --log_dir given cannot be used)
  // naming the path that could not be created or opened.
  RankLogFiles(const std::string& dir, const std::vector<int>& global_ranks);

  // The file of `global_rank`, or -1 when there is none. Owned by this object.
  int fd_for(int global_rank) const;

 private:
  std::map<int, UniqueFd> files_;
};

// A new directory $TMPDIR/paisoar_logs.XXXXXX (else under /tmp) for
// --redirects or --tee without --log-dir (torchrun too writes them to a
// temporary directory then); it is kept when the launcher ends. Throws
// std::runtime_error naming it when it cannot be made.
std::string make_temporary_log_dir();

}  // namespace paisoar::launch
