// The header-then-payload protocol between neighbouring stages: receives
// posted ahead of use, sends released by a waiter thread as they complete.
#include "src/pipeline/stage_link.h"

#include <c10/util/Exception.h>

#include <cstring>

namespace paisoar::pipeline::detail {
namespace {

constexpr int kMaxDims = 8;
// header: [status, dtype, ndim, dims[8], text length]
constexpr int64_t kHeaderSize = 3 + kMaxDims + 1;
constexpr int64_t kOk = 0, kFailed = 1;

torch::Tensor header() { return torch::zeros({kHeaderSize}, torch::kInt64); }

}  // namespace

void Outbox::post(const torch::Tensor& tensor, int peer, int tag) {
  comm::Work work = group_->send(tensor, peer, tag);
  const bool start = !waiter_.joinable();  // waiter_ is only touched from this thread
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back(Pending{std::move(work), tensor});
    if (start) closing_ = false;
  }
  if (start) {
    waiter_ = std::thread([this] { wait_sends(); });
  } else {
    changed_.notify_one();
  }
}

void Outbox::wait_sends() {
  for (;;) {
    Pending next;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return !pending_.empty() || closing_; });
      if (pending_.empty()) return;  // closing_, and nothing left
      next = std::move(pending_.front());
      pending_.pop_front();
      if (error_) continue;  // a send failed: the step fails; the rest are dropped, as wait() did
    }
    try {
      next.work.wait();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
    }
    // `next` goes here, outside the lock: its tensor is freed once the send is done.
  }
}

void Outbox::join() {
  if (!waiter_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  changed_.notify_one();
  waiter_.join();
}

void Outbox::send_tensor(const torch::Tensor& tensor, int peer, Channel channel) {
  TORCH_CHECK(tensor.dim() <= kMaxDims, "pipeline: a stage's output has ", tensor.dim(),
              " dimensions; at most ", kMaxDims, " can travel between stages (reshape it)");
  torch::Tensor h = header();
  auto* p = h.data_ptr<int64_t>();
  p[0] = kOk;
  p[1] = static_cast<int64_t>(tensor.scalar_type());
  p[2] = tensor.dim();
  for (int64_t d = 0; d < tensor.dim(); ++d) p[3 + d] = tensor.size(d);
  const int tag = static_cast<int>(channel);
  post(h, peer, tag);
  if (tensor.numel() > 0) post(tensor.contiguous(), peer, tag + 1);
}

void Outbox::send_error(const std::string& text, int peer, Channel channel) {
  TORCH_INTERNAL_ASSERT(!text.empty());
  torch::Tensor h = header();
  auto* p = h.data_ptr<int64_t>();
  p[0] = kFailed;
  p[kHeaderSize - 1] = static_cast<int64_t>(text.size());
  const int tag = static_cast<int>(channel);
  post(h, peer, tag);
  torch::Tensor bytes = torch::empty({static_cast<int64_t>(text.size())}, torch::kUInt8);
  std::memcpy(bytes.data_ptr(), text.data(), text.size());
  post(bytes, peer, tag + 1);
}

void Outbox::wait() {
  join();
  std::exception_ptr error;
  std::swap(error, error_);
  if (error) std::rethrow_exception(error);
}

Outbox::~Outbox() { join(); }

Inbox::Inbox(std::shared_ptr<comm::Communicator> group, int peer, Channel channel, int count,
             torch::Device device)
    : group_(std::move(group)), peer_(peer), tag_(static_cast<int>(channel)), device_(device) {
  for (int i = 0; i < count; ++i) {
    Slot slot;
    slot.header = header();
    slot.header_work = group_->recv(slot.header, peer_, tag_);
    slots_.push_back(std::move(slot));
  }
}

void Inbox::post_payload(Slot& slot) {
  const auto* p = slot.header.data_ptr<int64_t>();
  if (p[0] == kFailed) {
    slot.payload = torch::empty({p[kHeaderSize - 1]}, torch::kUInt8);
  } else {
    TORCH_CHECK(p[0] == kOk && p[2] >= 0 && p[2] <= kMaxDims,
                "pipeline: a malformed message header came from rank ", peer_,
                "; do both ranks run the same paisoar build?");
    std::vector<int64_t> shape(p + 3, p + 3 + p[2]);
    const auto dtype = static_cast<torch::ScalarType>(p[1]);
    slot.payload = torch::empty(shape, torch::TensorOptions().dtype(dtype).device(device_));
  }
  if (slot.payload.numel() > 0) slot.payload_work = group_->recv(slot.payload, peer_, tag_ + 1);
}

void Inbox::poll() {
  while (payloads_posted_ < slots_.size() && slots_[payloads_posted_].header_work.is_completed()) {
    Slot& slot = slots_[payloads_posted_];
    slot.header_work.wait();  // completed: returns at once, or throws its error
    post_payload(slot);
    ++payloads_posted_;
  }
}

Message Inbox::take() {
  TORCH_INTERNAL_ASSERT(taken_ < slots_.size(), "pipeline: more receives than the schedule has");
  // Payloads are posted in message order, so every earlier one goes first.
  while (payloads_posted_ <= taken_) {
    Slot& slot = slots_[payloads_posted_];
    slot.header_work.wait();
    post_payload(slot);
    ++payloads_posted_;
  }
  Slot& slot = slots_[taken_++];
  slot.payload_work.wait();
  Message msg;
  if (slot.header.data_ptr<int64_t>()[0] == kFailed) {
    msg.failed = true;
    msg.error.assign(static_cast<const char*>(slot.payload.data_ptr()),
                     static_cast<size_t>(slot.payload.numel()));
  } else {
    msg.tensor = slot.payload;
  }
  slot.header = slot.payload = torch::Tensor();  // the slot's buffers are the caller's now
  return msg;
}

}  // namespace paisoar::pipeline::detail
