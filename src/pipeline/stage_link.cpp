// The header-then-payload protocol between neighbouring stages, with receives
// posted ahead of use.
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
  release_completed();
  keep_alive_.push_back(tensor);
  sends_.push_back(group_->send(tensor, peer, tag));
}

void Outbox::release_completed() {
  size_t kept = 0;
  for (size_t i = 0; i < sends_.size(); ++i) {
    if (sends_[i].is_completed()) {
      try {
        sends_[i].wait();
        continue;  // done: its tensor can go (1F1B's memory bound depends on it)
      } catch (const std::exception&) {
        // kept, so wait() reports it
      }
    }
    sends_[kept] = std::move(sends_[i]);
    keep_alive_[kept] = std::move(keep_alive_[i]);
    ++kept;
  }
  sends_.resize(kept);
  keep_alive_.resize(kept);
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
  std::vector<comm::Work> sends;
  sends.swap(sends_);
  for (auto& work : sends) work.wait();
  keep_alive_.clear();
}

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
