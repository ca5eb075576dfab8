// StageLink: the point-to-point messages between neighbouring pipeline stages.
// Each message is a small header (dtype and shape, or "failed" and the
// length of an error text) followed by the tensor's bytes or the text, so a
// receiver allocates exactly what comes, checks it, and a stage that failed
// still answers every message its neighbours wait for: errors travel along
// the pipeline instead of leaving peers blocked in recv.
//
// Receives are posted ahead: every header of a step at its start, each payload
// as soon as its header is in (poll()). Gloo moves a message only once its
// receive is posted, so this lets activations and gradients travel while the
// stage computes instead of costing a round trip when the stage asks for them.
//
// Gloo's send and recv works report completion only through wait()
// (c10d's SendWork/RecvWork never set isCompleted() before it), so a sender
// cannot poll for completed sends: Outbox hands each send to a thread of its
// own that waits for it and then drops the tensor. Without that, every tensor a
// stage sent stayed alive to the end of the step, and 1F1B's memory grew with
// M (docs/BENCHMARKS.md, pipeline memory). The same fact makes poll() find no
// header before take() waits for it, so in practice payloads are posted when
// the stage takes them.
#pragma once

#include <torch/types.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "paisoar/comm/communicator.h"

namespace paisoar::pipeline::detail {

enum class Channel { Activation = 0, Gradient = 2 };  // the header's tag; the payload's is +1

// A tensor from a neighbour, or the error text that stopped its step.
struct Message {
  bool failed = false;
  torch::Tensor tensor;  // when !failed
  std::string error;     // when failed
};

// Sends to neighbours. Owned by one Pipeline step; send_tensor, send_error and
// wait are called from its thread. A send's tensor is released as soon as the
// send completes, by a waiter thread the Outbox starts at its first send and
// joins in wait() (or its destructor).
class Outbox {
 public:
  explicit Outbox(std::shared_ptr<comm::Communicator> group) : group_(std::move(group)) {}
  // Waits for the sends still in flight, dropping their errors. Reached without
  // wait() only when the step threw (a receive failed): a send whose neighbour
  // stopped receiving then blocks until the group's timeout, and after the
  // first failure the rest are dropped unwaited.
  ~Outbox();
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;
  // Asynchronous; `tensor` is kept alive until its send completes. At most 8 dims.
  void send_tensor(const torch::Tensor& tensor, int peer, Channel channel);
  void send_error(const std::string& text, int peer, Channel channel);
  // Waits for every send so far; throws the first failure (comm::CommError).
  void wait();

 private:
  struct Pending {
    comm::Work work;
    torch::Tensor tensor;  // alive until `work` completed
  };
  void post(const torch::Tensor& tensor, int peer, int tag);
  void wait_sends();  // the waiter thread: waits for pending_ in order, dropping each
  void join();        // lets the waiter finish the sends posted so far, and joins it

  std::shared_ptr<comm::Communicator> group_;
  std::mutex mutex_;  // guards pending_, closing_, error_
  std::condition_variable changed_;
  std::deque<Pending> pending_;  // posted, not yet waited for by the waiter
  bool closing_ = false;         // join() asked the waiter to stop once pending_ is empty
  std::exception_ptr error_;     // the first failed send; later sends are then dropped unwaited
  std::thread waiter_;           // runs wait_sends(); started by post(), joined by join()
};

// The `count` messages one neighbour sends on one channel during a step, in
// order. Construction posts every header receive. Used from one thread.
class Inbox {
 public:
  Inbox(std::shared_ptr<comm::Communicator> group, int peer, Channel channel, int count,
        torch::Device device);
  // Posts the payload receive of every message whose header arrived; never blocks.
  void poll();
  // The next message; blocks until it arrived. At most `count` calls.
  Message take();

 private:
  struct Slot {
    torch::Tensor header;
    comm::Work header_work;
    torch::Tensor payload;  // the tensor, or the error text's bytes
    comm::Work payload_work;
  };
  void post_payload(Slot& slot);  // REQUIRES: slot's header arrived

  std::shared_ptr<comm::Communicator> group_;
  int peer_;
  int tag_;
  torch::Device device_;
  std::deque<Slot> slots_;
  size_t payloads_posted_ = 0;  // slots [0, payloads_posted_) have their payload receive posted
  size_t taken_ = 0;
};

}  // namespace paisoar::pipeline::detail
