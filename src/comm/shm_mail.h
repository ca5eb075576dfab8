// ShmMail: point-to-point messages of a Backend::Shm group, matched by tag as
// c10d matches them. Sends to a peer run in order on a thread per peer,
// piece by piece through that pair's mailbox in the segment. Receives from a
// peer are served by a drainer thread per peer (started by the first recv
// from it) that empties the mailbox as soon as a piece is posted: into the
// first posted recv with the message's tag, or into a queue of unexpected
// messages a later recv takes. So a receiver may post receives of several
// tags ahead (the pipeline's links do) and a sender never waits on the order
// of the receiver's posts.
#pragma once

#include <ATen/ATen.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>

#include "src/comm/shm_segment.h"
#include "src/comm/shm_work.h"

namespace paisoar::comm::detail {

class ShmInbox;

class ShmMail {
 public:
  // `stopping` is the backend's: set before this is destroyed, it ends every wait.
  ShmMail(ShmSegment& segment, int rank, std::chrono::milliseconds timeout, const std::atomic<bool>& stopping);
  ~ShmMail();  // fails what is still pending ("the group was closed") and joins
  ShmMail(const ShmMail&) = delete;
  ShmMail& operator=(const ShmMail&) = delete;

  c10::intrusive_ptr<ShmWork> send(const at::Tensor& tensor, int dst, int tag);
  c10::intrusive_ptr<ShmWork> recv(const at::Tensor& tensor, int src, int tag);

 private:
  void run_send(const at::Tensor& tensor, int dst, int tag);

  ShmSegment& segment_;
  int rank_;
  std::chrono::milliseconds timeout_;
  const std::atomic<bool>& stopping_;
  std::mutex mutex_;  // guards the maps
  std::map<int, std::unique_ptr<Lane>> outboxes_;      // by destination
  std::map<int, std::unique_ptr<ShmInbox>> inboxes_;  // by source
};

}  // namespace paisoar::comm::detail
