// A private temporary directory for the files the launcher shares with its
// ranks: heartbeat files (PAISOAR_HEARTBEAT_FILE) and torch's error files
// (TORCHELASTIC_ERROR_FILE). Created under $TMPDIR (else /tmp) with mode
// 0700, removed with everything in it when the launcher ends.
#pragma once

#include <string>

namespace paisoar::launch {

// Not thread-safe; owned by the launcher's main thread.
class RankScratchDir {
 public:
  // Throws std::runtime_error naming the directory when it cannot be made.
  RankScratchDir();
  ~RankScratchDir();
  RankScratchDir(const RankScratchDir&) = delete;
  RankScratchDir& operator=(const RankScratchDir&) = delete;

  // <dir>/rank_<R>.<suffix>, removed if it exists: a new attempt starts
  // without the last attempt's file.
  std::string fresh_file(int global_rank, const std::string& suffix) const;

 private:
  std::string path_;
};

}  // namespace paisoar::launch
