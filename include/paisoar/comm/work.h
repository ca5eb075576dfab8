// Work: the handle every asynchronous collective returns. wait() blocks until the
// operation finished on this rank and its result is in the output tensors.
#pragma once

#include <memory>

namespace paisoar::comm {

namespace detail {
class WorkImpl;
}

// Thread safety: a Work may be waited on from one thread at a time. Dropping a
// Work without waiting is allowed: the operation still completes on the wire
// (the Communicator keeps its buffers alive), so peers are not left waiting,
// but the result is not finished (AVG division, bf16 down-cast, reduce-scatter
// sums happen in wait()), so the output tensors hold no defined value.
class Work {
 public:
  Work() = default;  // an already-completed no-op
  explicit Work(std::shared_ptr<detail::WorkImpl> impl);

  // Blocks until done. Throws CommError naming the operation, rank and cause.
  // Calling wait() again after it returned is a no-op.
  void wait();
  // True when the backend finished (wait() would not block). Never true before
  // wait() for send and recv on Gloo: c10d's Gloo send/recv works (1.13, 2.14) record
  // completion only inside wait(). Wait on a thread of your own to act on
  // completion (the pipeline's Outbox and Inbox do).
  bool is_completed() const;

 private:
  std::shared_ptr<detail::WorkImpl> impl_;
};

}  // namespace paisoar::comm
