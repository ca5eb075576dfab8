// ShmMail (shm_mail.h): the send lanes, and ShmInbox, the receiving side of
// one peer's mailbox: posted receives and unexpected messages, matched by tag
// in order, and the drainer thread that fills them.
#include "src/comm/shm_mail.h"

#include <c10/util/Exception.h>

#include <cstring>
#include <deque>
#include <optional>
#include <thread>

namespace paisoar::comm::detail {

struct ShmPendingRecv {
  int tag;
  at::Tensor tensor;
  c10::intrusive_ptr<ShmWork> work;
  std::chrono::steady_clock::time_point deadline;
};

// A message no receive was posted for when it began to arrive.
struct ShmArrival {
  int tag;
  at::Tensor bytes;  // uint8, the whole message
  bool complete = false;
  std::optional<ShmPendingRecv> claimed;  // a receive posted while it was arriving
};

namespace {

using Clock = std::chrono::steady_clock;

// How long the drainer sleeps when no receive is waiting on a deadline.
constexpr auto kIdleWait = std::chrono::milliseconds(200);

std::string size_mismatch(int src, int dst, uint64_t sent, const ShmPendingRecv& recv) {
  return "shm backend: size mismatch: rank " + std::to_string(src) + " sent " + std::to_string(sent) +
         " bytes (nbytes) with tag " + std::to_string(recv.tag) + ", rank " + std::to_string(dst) +
         " expects " + std::to_string(recv.tensor.nbytes());
}

void deliver(const at::Tensor& bytes, const ShmPendingRecv& recv, int src, int dst) {
  if (static_cast<uint64_t>(bytes.numel()) != recv.tensor.nbytes()) {
    recv.work->finish(size_mismatch(src, dst, bytes.numel(), recv));
    return;
  }
  run_to_finish(*recv.work, [&] {
    recv.tensor.copy_(at::from_blob(bytes.data_ptr(), recv.tensor.sizes(), recv.tensor.options()));
  });
}

}  // namespace

class ShmInbox {
 public:
  ShmInbox(ShmSegment& segment, int src, int rank, const std::atomic<bool>& stopping)
      : segment_(segment), src_(src), rank_(rank), stopping_(stopping), drainer_([this] { drain(); }) {}
  ~ShmInbox() { drainer_.join(); }  // the owner has set `stopping`

  void post(ShmPendingRecv recv) {
    std::unique_lock<std::mutex> lock(mutex_);
    for (auto it = arrived_.begin(); it != arrived_.end(); ++it) {
      const std::shared_ptr<ShmArrival> arrival = *it;
      if (arrival->tag != recv.tag || arrival->claimed) continue;
      if (!arrival->complete) {
        arrival->claimed = std::move(recv);
        return;
      }
      arrived_.erase(it);
      lock.unlock();
      deliver(arrival->bytes, recv, src_, rank_);
      return;
    }
    if (!broken_.empty()) {
      recv.work->finish(broken_);
      return;
    }
    posted_.push_back(std::move(recv));
  }

 private:
  // The message being drained.
  struct Incoming {
    uint64_t total = 0;
    uint64_t off = 0;
    uint8_t* data = nullptr;  // where its pieces go; null: discarded
    std::optional<ShmPendingRecv> target;
    at::Tensor staging;  // for a target that is not contiguous
    std::shared_ptr<ShmArrival> arrival;
  };

  void drain() {
    ShmMailbox& box = segment_.mailbox(src_, rank_);
    uint32_t consumed = box.consumed.load();
    const ShmWatch watch{&segment_, src_, &stopping_, [this] { return "rank " + std::to_string(src_) + " to send"; }};
    std::optional<Incoming> incoming;
    while (true) {
      bool ready = false;
      try {
        ready = shm_wait_until(box.posted, [&] { return box.posted.load(std::memory_order_acquire) != consumed; },
                               watch, next_deadline());
      } catch (const c10::Error& e) {
        fail_all(e.what_without_backtrace(), incoming);
        return;
      }
      if (!ready) {
        expire();
        continue;
      }
      if (!incoming) {
        try {
          incoming = begin(box.tag, box.total);
        } catch (const std::exception& e) {  // no memory for an unexpected message
          fail_all(std::string("shm backend: cannot receive from rank ") + std::to_string(src_) + ": " + e.what(),
                   incoming);
          return;
        }
      }
      if (incoming->data != nullptr && box.bytes > 0) {
        std::memcpy(incoming->data + incoming->off, segment_.mail_data(src_, rank_), box.bytes);
      }
      incoming->off += box.bytes;
      box.consumed.store(++consumed, std::memory_order_release);
      shm_wake(box.consumed);
      if (incoming->off >= incoming->total) {
        complete(*incoming);
        incoming.reset();
      }
    }
  }

  Incoming begin(int tag, uint64_t total) {
    Incoming in;
    in.total = total;
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = posted_.begin(); it != posted_.end(); ++it) {
      if (it->tag != tag) continue;
      ShmPendingRecv recv = std::move(*it);
      posted_.erase(it);
      if (recv.tensor.nbytes() != total) {
        recv.work->finish(size_mismatch(src_, rank_, total, recv));
        return in;  // discarded
      }
      if (recv.tensor.is_contiguous()) {
        in.data = static_cast<uint8_t*>(recv.tensor.data_ptr());
      } else {
        in.staging = at::empty({static_cast<int64_t>(total)}, at::kByte);
        in.data = in.staging.data_ptr<uint8_t>();
      }
      in.target = std::move(recv);
      return in;
    }
    in.arrival = std::make_shared<ShmArrival>();
    in.arrival->tag = tag;
    in.arrival->bytes = at::empty({static_cast<int64_t>(total)}, at::kByte);
    in.data = in.arrival->bytes.data_ptr<uint8_t>();
    arrived_.push_back(in.arrival);
    return in;
  }

  void complete(Incoming& in) {
    if (in.target) {
      if (in.staging.defined()) {
        deliver(in.staging, *in.target, src_, rank_);
      } else {
        in.target->work->finish("");
      }
      return;
    }
    if (!in.arrival) return;
    std::unique_lock<std::mutex> lock(mutex_);
    in.arrival->complete = true;
    if (!in.arrival->claimed) return;
    for (auto it = arrived_.begin(); it != arrived_.end(); ++it) {
      if (*it == in.arrival) {
        arrived_.erase(it);
        break;
      }
    }
    lock.unlock();
    deliver(in.arrival->bytes, *in.arrival->claimed, src_, rank_);
  }

  Clock::time_point next_deadline() {
    std::lock_guard<std::mutex> lock(mutex_);
    Clock::time_point deadline = Clock::now() + kIdleWait;
    for (const auto& recv : posted_) deadline = std::min(deadline, recv.deadline);
    return deadline;
  }

  void expire() {
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = posted_.begin(); it != posted_.end();) {
      if (it->deadline > now) {
        ++it;
        continue;
      }
      it->work->finish("shm backend: timed out waiting for rank " + std::to_string(src_) +
                       " to send a message with tag " + std::to_string(it->tag));
      it = posted_.erase(it);
    }
  }

  // The peer left or died, or this group closed: no more messages come.
  void fail_all(const std::string& error, std::optional<Incoming>& incoming) {
    if (incoming && incoming->target) incoming->target->work->finish(error);
    std::lock_guard<std::mutex> lock(mutex_);
    broken_ = error;
    for (auto& recv : posted_) recv.work->finish(error);
    posted_.clear();
    // Complete messages stay for later receives; partial ones never complete.
    for (auto it = arrived_.begin(); it != arrived_.end();) {
      if ((*it)->complete) {
        ++it;
        continue;
      }
      if ((*it)->claimed) (*it)->claimed->work->finish(error);
      it = arrived_.erase(it);
    }
  }

  ShmSegment& segment_;
  int src_;
  int rank_;
  const std::atomic<bool>& stopping_;
  std::mutex mutex_;  // guards the three below
  std::deque<ShmPendingRecv> posted_;
  std::deque<std::shared_ptr<ShmArrival>> arrived_;
  std::string broken_;
  std::thread drainer_;  // last: starts after the rest is built
};

ShmMail::ShmMail(ShmSegment& segment, int rank, std::chrono::milliseconds timeout, const std::atomic<bool>& stopping)
    : segment_(segment), rank_(rank), timeout_(timeout), stopping_(stopping) {}

ShmMail::~ShmMail() {
  for (int r = 0; r < segment_.size(); ++r) {
    shm_wake(segment_.mailbox(r, rank_).posted);
    shm_wake(segment_.mailbox(rank_, r).consumed);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  outboxes_.clear();
  inboxes_.clear();
}

c10::intrusive_ptr<ShmWork> ShmMail::send(const at::Tensor& tensor, int dst, int tag) {
  auto work = c10::make_intrusive<ShmWork>(timeout_);
  Lane* lane = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<Lane>& owned = outboxes_[dst];
    if (!owned) owned = std::make_unique<Lane>();
    lane = owned.get();  // lanes live as long as this ShmMail
  }
  auto task = [this, work, tensor, dst, tag] { run_to_finish(*work, [&] { run_send(tensor, dst, tag); }); };
  // A message of one mailbox piece, with no send to `dst` before it in
  // flight, goes out at once on the caller's thread, as an eager send: it
  // waits at most for the receiver's drainer thread to take the previous
  // piece, never for the receiving program.
  if (tensor.nbytes() <= kShmMailBytes && lane->run_here_if_idle(task)) return work;
  lane->push(std::move(task));
  return work;
}

c10::intrusive_ptr<ShmWork> ShmMail::recv(const at::Tensor& tensor, int src, int tag) {
  auto work = c10::make_intrusive<ShmWork>(timeout_);
  std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<ShmInbox>& inbox = inboxes_[src];
  if (!inbox) inbox = std::make_unique<ShmInbox>(segment_, src, rank_, stopping_);
  inbox->post(ShmPendingRecv{tag, tensor, work, Clock::now() + timeout_});
  return work;
}

// Piece by piece: each waits until the receiver's drainer has taken the
// previous one. Done once the last piece is posted (the data is out of the
// tensor), as an eager send is.
void ShmMail::run_send(const at::Tensor& tensor, int dst, int tag) {
  ShmMailbox& box = segment_.mailbox(rank_, dst);
  const auto deadline = Clock::now() + timeout_;
  const at::Tensor flat = tensor.contiguous().view({-1});
  const auto* data = static_cast<const uint8_t*>(flat.data_ptr());
  const uint64_t total = tensor.nbytes();
  const ShmWatch watch{&segment_, dst, &stopping_, [dst] { return "rank " + std::to_string(dst) + " to receive"; }};
  uint64_t off = 0;
  do {
    const uint32_t posted = box.posted.load();
    shm_wait(box.consumed, [&] { return box.consumed.load(std::memory_order_acquire) == posted; }, watch, deadline);
    const uint64_t bytes = std::min<uint64_t>(kShmMailBytes, total - off);
    box.tag = tag;
    box.total = total;
    box.bytes = bytes;
    if (bytes > 0) std::memcpy(segment_.mail_data(rank_, dst), data + off, bytes);
    box.posted.store(posted + 1, std::memory_order_release);
    shm_wake(box.posted);
    off += bytes;
  } while (off < total);
}

}  // namespace paisoar::comm::detail
