// The link between one node's Supervisor and the rest of a multi-node job:
// the other nodes' verdict ("node 1 failed, stop") arrives on a descriptor
// that the supervisor polls along with the ranks' pipes, and this node's
// first failure goes out to the others. NodeLink implements it over the
// rendezvous store; a single-node job has none.
#pragma once

#include <optional>
#include <string>

namespace paisoar::launch {

class JobEvents {
 public:
  virtual ~JobEvents() = default;

  // For poll(): readable when the job may have news for this node.
  virtual int fd() const = 0;

  // Called when fd() was readable. Returns why this node's ranks must stop
  // now (e.g. "node 1 failed: rank 1 (local_rank 0, pid 12) was killed by
  // signal 9 (SIGKILL)"), or nullopt when there is nothing to act on.
  // Throws StoreConnectionLost (store_client.h) when the job is unreachable.
  virtual std::optional<std::string> take_stop_reason() = 0;

  // This node's group failed; `what` describes the first failure. The other
  // nodes stop theirs. Throws StoreConnectionLost like take_stop_reason().
  virtual void report_failure(const std::string& what) = 0;
};

}  // namespace paisoar::launch
