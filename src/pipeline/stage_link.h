// StageLink: the point-to-point messages between neighbouring pipeline stages.
// Each message is a small header (dtype and shape, or "failed" and the
// length of an error text) and then the tensor's bytes or the text, so a
// receiver allocates exactly what comes, checks it, and a stage that failed
// still answers every message its neighbours wait for: errors travel along
// the pipeline instead of leaving peers blocked in recv.
//
// Receives are posted ahead, a window of kWindow messages beyond the one the
// stage takes next: the header's, and the payload's too when the link
// remembers the message's shape from the last step (link_shapes.h). Gloo
// moves a message only once its receive is posted; a payload posted after its
// header arrived cost a round trip (receive-ready notice, then the bytes, each
// through a Gloo device thread) on every transfer a stage waited for. Now the
// bytes follow the header at once and are in place when the stage takes them.
// An expected payload of at most Inbox::kInlineBytes travels inside the
// header message instead (one message per transfer, for a copy into it; the
// received tensor is a view of that buffer), as MPI's eager protocol does.
// When a message does not fit what was posted (its shape changed, or it is an
// error text), the sender fills the posted payload (or inline room) with as
// many bytes and sends the message on the "late" tag, posted by the receiver
// once the header told it the size: the same sizes on both ends, as NCCL
// requires too.
//
// Gloo's send and recv works report completion only through wait()
// (c10d's SendWork/RecvWork never set isCompleted() before it), so a sender
// cannot poll for completed sends: Outbox hands each send to a thread of its
// own that waits for it and then drops the tensor. Without that, every tensor a
// stage sent stayed alive to the end of the step, and 1F1B's memory grew with
// M (docs/BENCHMARKS.md, pipeline memory).
#pragma once

#include <torch/types.h>

#include <condition_variable>
#include <deque>
#include <optional>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "paisoar/comm/communicator.h"
#include "src/pipeline/link_shapes.h"

namespace paisoar::pipeline::detail {

constexpr int kMaxDims = 8;  // the most dimensions a tensor between stages may have

// The header's tag; the posted payload's is +1, the late payload's +2.
enum class Channel { Activation = 0, Gradient = 3 };

// Why `t` cannot go to a neighbour ("" when it can): undefined, more than
// kMaxDims dimensions, or not on the CPU when the link posts ahead
// (`posts_ahead`). Callers fail in-band with it, so both ends stay in step.
std::string unsendable(const torch::Tensor& t, bool posts_ahead);

// A tensor from a neighbour, or the error text that stopped its step.
struct Message {
  bool failed = false;
  torch::Tensor tensor;  // when !failed
  std::string error;     // when failed
};

// Sends to neighbours. Owned by one Pipeline step; send_tensor, send_error and
// wait are called from its thread. A send's tensor is released as soon as the
// send completes, by a waiter thread the Outbox starts at its first send and
// joins in wait() (or its destructor). `activations` and `gradients` are what
// the links remember of the messages sent on each channel (null: nothing).
class Outbox {
 public:
  explicit Outbox(std::shared_ptr<comm::Communicator> group, LinkShapes* activations = nullptr,
                  LinkShapes* gradients = nullptr)
      : group_(std::move(group)), shapes_{activations, gradients} {}
  // Waits for the sends still in flight, dropping their errors. Reached without
  // wait() only when the step threw mid-exchange (e.g. a receive failed): a
  // send whose neighbour stopped receiving then blocks until the group's
  // timeout, and after the first failure the rest are dropped unwaited.
  ~Outbox();
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;
  // Asynchronous; `tensor` is kept alive until its send completes. At most kMaxDims dims.
  void send_tensor(const torch::Tensor& tensor, int peer, Channel channel);
  void send_error(const std::string& text, int peer, Channel channel);
  // Waits for every send so far; throws the first failure (comm::CommError).
  void wait();

 private:
  struct Pending {
    comm::Work work;
    torch::Tensor tensor;  // alive until `work` completed
  };
  // The next message on `channel` (its number is sent_[channel_slot]): its header (whose fields
  // `describe` fills), then `payload` as the link's receiver expects it (see
  // the top of this file).
  void send_message(const torch::Tensor& payload, int peer, Channel channel,
                    const std::optional<MessageShape>& announced,
                    const std::function<void(int64_t*)>& describe);
  void post(const torch::Tensor& tensor, int peer, int tag);
  void wait_sends();  // the waiter thread: waits for pending_ in order, dropping each
  void join();        // lets the waiter finish the sends posted so far, and joins it

  std::shared_ptr<comm::Communicator> group_;
  LinkShapes* shapes_[2];  // by channel_slot: activations, gradients
  int sent_[2] = {0, 0};   // by channel_slot: messages sent so far
  std::mutex mutex_;       // guards pending_, closing_, error_
  std::condition_variable changed_;
  std::deque<Pending> pending_;  // posted, not yet waited for by the waiter
  bool closing_ = false;         // join() asked the waiter to stop once pending_ is empty
  std::exception_ptr error_;     // the first failed send; later sends are then dropped unwaited
  std::thread waiter_;           // runs wait_sends(); started by post(), joined by join()
};

// The `count` messages one neighbour sends on one channel during a step, in
// order. Used from one thread. `shapes` (may be null) is what this end of the
// link remembers; take() records each message's shape in it.
class Inbox {
 public:
  static constexpr int kWindow = 2;  // messages posted beyond the next one taken
  // Expected payloads up to this size travel inside the header message (one
  // message per transfer instead of two, for a copy of at most this much).
  static constexpr int64_t kInlineBytes = 64 * 1024;

  // Posts the receives of the first 1 + kWindow messages.
  Inbox(std::shared_ptr<comm::Communicator> group, int peer, Channel channel, int count,
        torch::Device device, LinkShapes* shapes = nullptr);
  // Posts the receives up to kWindow messages beyond the next one; never
  // blocks. Call it after each op, once the op's sends are out.
  void top_up();
  // The next message; blocks until it arrived. At most `count` calls.
  Message take();
  // Every message was taken.
  bool done() const { return taken_ == count_; }

 private:
  struct Slot {
    torch::Tensor header;  // the header message: its fields, then an inline payload's bytes
    comm::Work header_work;
    std::optional<MessageShape> expected;  // what the link expects of this message, if anything
    torch::Tensor payload;
    comm::Work payload_work;
  };
  void post(int index);
  // The late payload of `slot` (the message, or its error text's bytes), as its header describes it.
  torch::Tensor receive_late(const Slot& slot, const std::optional<MessageShape>& announced);

  std::shared_ptr<comm::Communicator> group_;
  int peer_;
  int tag_;
  int count_;
  torch::Device device_;
  LinkShapes* shapes_;
  std::vector<Slot> slots_;
  int posted_ = 0;  // slots [0, posted_) have their receives posted
  int taken_ = 0;
};

}  // namespace paisoar::pipeline::detail
