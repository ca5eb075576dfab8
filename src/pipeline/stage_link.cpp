// The header-then-payload protocol between neighbouring stages: receives
// posted ahead of use, small payloads inside the header message, sends
// released by a waiter thread as they complete.
#include "src/pipeline/stage_link.h"

#include <c10/util/Exception.h>

#include <cstring>
#include <functional>
#include <sstream>

namespace paisoar::pipeline::detail {
namespace {

// The header message: kHeaderBytes of int64 fields [status, dtype, ndim,
// dims[8], text length, layout], then the inline payload's bytes, if any.
constexpr int64_t kHeaderBytes = 128;  // keeps the inline payload 16-byte aligned
constexpr int64_t kTextLength = 3 + kMaxDims, kLayoutField = 4 + kMaxDims;
constexpr int64_t kOk = 0, kFailed = 1;
constexpr int kPostedTag = 1, kLateTag = 2;  // added to the channel's header tag

// Where a message's bytes go, decided alike on both ends from what the link
// expects: nothing expected (kLate), a payload receive posted ahead
// (kPosted), or a small payload inside the header message (kInline).
enum Layout : int64_t { kLate = 0, kPosted = 1, kInline = 2 };

int64_t* fields(const torch::Tensor& header) { return reinterpret_cast<int64_t*>(header.data_ptr<uint8_t>()); }

Layout layout_for(const std::optional<MessageShape>& expected) {
  if (!expected) return kLate;
  return expected->nbytes() <= Inbox::kInlineBytes ? kInline : kPosted;
}

// A zeroed header message with room for `expected`'s bytes when they go inline.
torch::Tensor header_for(Layout layout, const std::optional<MessageShape>& expected) {
  const int64_t inline_bytes = layout == kInline ? expected->nbytes() : 0;
  torch::Tensor h = torch::zeros({kHeaderBytes + inline_bytes}, torch::kUInt8);
  fields(h)[kLayoutField] = layout;
  return h;
}

int channel_slot(Channel channel) { return channel == Channel::Activation ? 0 : 1; }

}  // namespace

std::string unsendable(const torch::Tensor& t, bool posts_ahead) {
  if (!t.defined()) return "is undefined; a stage must produce a tensor";
  std::ostringstream why;
  if (t.dim() > kMaxDims) {
    why << t.sizes() << " has " << t.dim() << " dimensions; at most " << kMaxDims
        << " can travel between stages (reshape it)";
  } else if (posts_ahead && !t.is_cpu()) {
    why << "is on " << t.device() << ", but the stages were on the CPU when the Pipeline was built, "
        << "so its links post receives ahead for CPU tensors; place the stages before building the Pipeline";
  }
  return why.str();
}

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

void Outbox::send_message(const torch::Tensor& payload, int peer, Channel channel,
                          const std::optional<MessageShape>& announced, const std::function<void(int64_t*)>& describe) {
  const int slot = channel_slot(channel);
  const int index = sent_[slot]++;
  LinkShapes* shapes = shapes_[slot];
  const std::optional<MessageShape> expected = shapes ? shapes->expected(index) : std::nullopt;
  const Layout layout = layout_for(expected);
  const bool fits = expected && announced && *expected == *announced;
  TORCH_CHECK(layout == kLate || payload.is_cpu(), "pipeline: a ", payload.device(),
              " tensor on a link that posts ahead for CPU tensors (check unsendable() first)");
  const int tag = static_cast<int>(channel);
  torch::Tensor h = header_for(layout, expected);
  describe(fields(h));
  if (layout == kInline && fits) {
    std::memcpy(h.data_ptr<uint8_t>() + kHeaderBytes, payload.data_ptr(), expected->nbytes());
  }
  post(h, peer, tag);
  // A posted payload is filled: with the message when it fits, else with as many bytes.
  if (layout == kPosted) post(fits ? payload : torch::empty({expected->nbytes()}, torch::kUInt8), peer, tag + kPostedTag);
  if (!fits && payload.numel() > 0) post(payload, peer, tag + kLateTag);
  if (shapes) shapes->record(index, announced);
}

void Outbox::send_tensor(const torch::Tensor& tensor, int peer, Channel channel) {
  const std::string why = unsendable(tensor, /*posts_ahead=*/false);  // callers check first, in-band
  TORCH_CHECK(why.empty(), "pipeline: the tensor for rank ", peer, " ", why);
  send_message(tensor.contiguous(), peer, channel, MessageShape::of(tensor), [&](int64_t* p) {
    p[0] = kOk;
    p[1] = static_cast<int64_t>(tensor.scalar_type());
    p[2] = tensor.dim();
    for (int64_t d = 0; d < tensor.dim(); ++d) p[3 + d] = tensor.size(d);
  });
}

void Outbox::send_error(const std::string& text, int peer, Channel channel) {
  TORCH_INTERNAL_ASSERT(!text.empty());
  torch::Tensor bytes = torch::empty({static_cast<int64_t>(text.size())}, torch::kUInt8);
  std::memcpy(bytes.data_ptr(), text.data(), text.size());
  send_message(bytes, peer, channel, std::nullopt, [&](int64_t* p) {
    p[0] = kFailed;
    p[kTextLength] = static_cast<int64_t>(text.size());
  });
}

void Outbox::wait() {
  join();
  std::exception_ptr error;
  std::swap(error, error_);
  if (error) std::rethrow_exception(error);
}

Outbox::~Outbox() { join(); }

Inbox::Inbox(std::shared_ptr<comm::Communicator> group, int peer, Channel channel, int count,
             torch::Device device, LinkShapes* shapes)
    : group_(std::move(group)), peer_(peer), tag_(static_cast<int>(channel)), count_(count),
      device_(device), shapes_(shapes), slots_(count) {
  top_up();
}

void Inbox::post(int index) {
  Slot& slot = slots_[index];
  slot.expected = shapes_ ? shapes_->expected(index) : std::nullopt;
  const Layout layout = layout_for(slot.expected);
  slot.header = header_for(layout, slot.expected);
  slot.header_work = group_->recv(slot.header, peer_, tag_);
  if (layout == kPosted) {
    slot.payload = torch::empty(slot.expected->sizes, torch::TensorOptions().dtype(slot.expected->dtype).device(device_));
    slot.payload_work = group_->recv(slot.payload, peer_, tag_ + kPostedTag);
  }
}

void Inbox::top_up() {
  while (posted_ < count_ && posted_ <= taken_ + kWindow) post(posted_++);
}

torch::Tensor Inbox::receive_late(const Slot& slot, const std::optional<MessageShape>& announced) {
  torch::Tensor late;
  if (announced) {
    late = torch::empty(announced->sizes, torch::TensorOptions().dtype(announced->dtype).device(device_));
  } else {
    late = torch::empty({fields(slot.header)[kTextLength]}, torch::kUInt8);
  }
  if (late.numel() > 0) group_->recv(late, peer_, tag_ + kLateTag).wait();
  return late;
}

Message Inbox::take() {
  TORCH_INTERNAL_ASSERT(taken_ < count_, "pipeline: more receives than the schedule has");
  const int index = taken_++;
  while (posted_ <= index) post(posted_++);  // had no top_up() posted it
  Slot& slot = slots_[index];
  slot.header_work.wait();
  const int64_t* p = fields(slot.header);
  const bool failed = p[0] == kFailed;
  TORCH_CHECK(failed || (p[0] == kOk && p[2] >= 0 && p[2] <= kMaxDims),
              "pipeline: a malformed message header came from rank ", peer_,
              "; do both ranks run the same paisoar build?");
  const Layout layout = layout_for(slot.expected);
  TORCH_CHECK(p[kLayoutField] == layout, "pipeline: rank ", peer_,
              " and this rank disagree on what they remember of message ", index,
              " (the links are out of step); do both ranks run the same paisoar build?");
  std::optional<MessageShape> announced;
  if (!failed) {
    announced = MessageShape{static_cast<torch::ScalarType>(p[1]), std::vector<int64_t>(p + 3, p + 3 + p[2])};
  }
  Message msg;
  if (slot.expected && announced && *slot.expected == *announced) {
    if (layout == kInline) {
      // A tensor over the header message's bytes, which it keeps alive.
      torch::Tensor bytes = slot.header;
      msg.tensor = torch::from_blob(bytes.data_ptr<uint8_t>() + kHeaderBytes, announced->sizes,
                                    [bytes](void*) mutable { bytes.reset(); }, torch::TensorOptions().dtype(announced->dtype));
    } else {
      slot.payload_work.wait();
      msg.tensor = slot.payload;
    }
  } else {
    if (layout == kPosted) slot.payload_work.wait();  // the filler
    torch::Tensor late = receive_late(slot, announced);
    if (failed) {
      msg.failed = true;
      msg.error.assign(static_cast<const char*>(late.data_ptr()), static_cast<size_t>(late.numel()));
    } else {
      msg.tensor = late;
    }
  }
  if (shapes_) shapes_->record(index, announced);
  slot = Slot();  // the buffers are the caller's now
  return msg;
}

}  // namespace paisoar::pipeline::detail
