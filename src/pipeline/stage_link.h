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
#pragma once

#include <torch/types.h>

#include <deque>
#include <memory>
#include <string>
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

// Sends to neighbours. Owned by one Pipeline step, used from its thread.
class Outbox {
 public:
  explicit Outbox(std::shared_ptr<comm::Communicator> group) : group_(std::move(group)) {}
  // Asynchronous; `tensor` is kept alive until its send completes (released
  // at a later send or at wait()). At most 8 dims.
  void send_tensor(const torch::Tensor& tensor, int peer, Channel channel);
  void send_error(const std::string& text, int peer, Channel channel);
  // Waits for every send so far (throws comm::CommError on failure).
  void wait();

 private:
  void post(const torch::Tensor& tensor, int peer, int tag);
  void release_completed();  // drops the sends (and tensors) that are done
  std::shared_ptr<comm::Communicator> group_;
  std::vector<comm::Work> sends_;
  std::vector<torch::Tensor> keep_alive_;
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
