// ProgressBoard over the group's (already prefixed) store: one key per rank,
// read back with check() first so a rank that never posted does not block.
#include "paisoar/comm/progress_board.h"
#include "paisoar/error.h"

#include "paisoar/comm/communicator.h"

namespace paisoar::comm {

ProgressBoard::ProgressBoard(const std::shared_ptr<Communicator>& comm)
    : store_(comm->store()), rank_(comm->rank()), size_(comm->size()) {}

void ProgressBoard::post(int64_t step) {
  if (size_ > 1) store_.set(key(rank_), std::to_string(step));
}

std::string ProgressBoard::behind(int64_t step) const {
  std::string out;
  try {
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      std::string entry;
      if (!store_.check({key(r)})) {
        entry = "rank " + std::to_string(r) + " (posted nothing)";
      } else {
        const int64_t at = std::stoll(store_.get(key(r)));
        if (at < step) entry = "rank " + std::to_string(r) + " (last started step " + std::to_string(at) + ")";
      }
      if (!entry.empty()) out += (out.empty() ? "" : ", ") + entry;
    }
  } catch (const std::exception&) {
    return "";  // the store went with a dead rank 0: nothing can be known
  }
  return out;
}

CommError ProgressBoard::explain(const CommError& error, int64_t step) const {
  if (error.cause() != CommError::Cause::Timeout) return error;
  const std::string laggards = behind(step);
  return CommError(std::string(error_text(error)) + "\n  this rank (" + std::to_string(rank_) + ") was at step " +
                       std::to_string(step) +
                       (laggards.empty() ? "; no rank is known to be behind it"
                                         : "; behind it: " + laggards + " (stuck, stopped or much slower)"),
                   CommError::Cause::Timeout);
}

}  // namespace paisoar::comm
