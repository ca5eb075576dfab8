// The header-then-payload protocol between neighbouring stages.
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

void StageLink::post(const torch::Tensor& tensor, int peer, int tag) {
  keep_alive_.push_back(tensor);
  sends_.push_back(group_->send(tensor, peer, tag));
}

void StageLink::send_tensor(const torch::Tensor& tensor, int peer, Channel channel) {
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

void StageLink::send_error(const std::string& text, int peer, Channel channel) {
  torch::Tensor h = header();
  auto* p = h.data_ptr<int64_t>();
  p[0] = kFailed;
  p[kHeaderSize - 1] = static_cast<int64_t>(text.size());
  const int tag = static_cast<int>(channel);
  post(h, peer, tag);
  if (text.empty()) return;
  torch::Tensor bytes = torch::empty({static_cast<int64_t>(text.size())}, torch::kUInt8);
  std::memcpy(bytes.data_ptr(), text.data(), text.size());
  post(bytes, peer, tag + 1);
}

Message StageLink::recv(int peer, Channel channel, const torch::Device& device) {
  const int tag = static_cast<int>(channel);
  torch::Tensor h = header();
  group_->recv(h, peer, tag).wait();
  const auto* p = h.data_ptr<int64_t>();
  Message msg;
  if (p[0] == kFailed) {
    msg.failed = true;
    const int64_t length = p[kHeaderSize - 1];
    msg.error.resize(static_cast<size_t>(length));
    if (length > 0) {
      torch::Tensor bytes = torch::empty({length}, torch::kUInt8);
      group_->recv(bytes, peer, tag + 1).wait();
      std::memcpy(msg.error.data(), bytes.data_ptr(), static_cast<size_t>(length));
    }
    return msg;
  }
  TORCH_CHECK(p[0] == kOk && p[2] >= 0 && p[2] <= kMaxDims,
              "pipeline: a malformed message header came from rank ", peer,
              "; do both ranks run the same paisoar build?");
  std::vector<int64_t> shape(p + 3, p + 3 + p[2]);
  const auto dtype = static_cast<torch::ScalarType>(p[1]);
  msg.tensor = torch::empty(shape, torch::TensorOptions().dtype(dtype).device(device));
  if (msg.tensor.numel() > 0) group_->recv(msg.tensor, peer, tag + 1).wait();
  return msg;
}

void StageLink::wait_sends() {
  std::vector<comm::Work> sends;
  sends.swap(sends_);
  for (auto& work : sends) work.wait();
  keep_alive_.clear();
}

}  // namespace paisoar::pipeline::detail
