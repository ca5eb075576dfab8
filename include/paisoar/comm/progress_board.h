// ProgressBoard: each rank posts how far it got (a step number) to its group's
// store, so that when a collective times out every rank that waited can name
// the ranks behind it, which are the ones that did not join (stuck, stopped
// with SIGSTOP, or much slower), instead of only "a peer did not join".
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "paisoar/comm/store.h"
#include "paisoar/comm/types.h"

namespace paisoar::comm {

class Communicator;

// Used by one thread per rank (the one that issues the rank's collectives).
class ProgressBoard {
 public:
  explicit ProgressBoard(const std::shared_ptr<Communicator>& comm);

  // Records that this rank has started `step`: one store write.
  void post(int64_t step);

  // The ranks whose last posted step is below `step`, e.g. "rank 1 (last
  // started step 4), rank 3 (posted nothing)"; "" if none is behind or the
  // store cannot be read. Never waits for a key.
  std::string behind(int64_t step) const;

  // For a Timeout: a CommError with the same cause whose message adds the step
  // and the ranks behind it. Any other error is returned unchanged.
  CommError explain(const CommError& error, int64_t step) const;

 private:
  std::string key(int rank) const { return "paisoar.progress/" + std::to_string(rank); }

  Store store_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace paisoar::comm
