// A torch DDP communication hook (c10d::CommHookInterface: the Python
// `hook(state, bucket: dist.GradBucket) -> torch.futures.Future[Tensor]` of
// register_comm_hook) run as paisoar's ddp::CommHook, under torch's contract:
// the bucket's buffer is this rank's gradients, not divided by the world size;
// the future's tensor becomes the bucket's gradients.
#pragma once

#include <torch/csrc/distributed/c10d/comm.hpp>

#include <map>
#include <memory>

#include "paisoar/ddp/comm_hook.h"

namespace paisoar::python {

class TorchCommHook final : public ddp::CommHook {
 public:
  explicit TorchCommHook(std::unique_ptr<c10d::CommHookInterface> hook) : hook_(std::move(hook)) {}

  void launch(size_t bucket, const torch::Tensor& flat, const ddp::BucketLayout& layout) override;
  void finish(size_t bucket, const torch::Tensor& flat, const ddp::BucketLayout& layout) override;
  void reset() override { pending_.clear(); }
  // The hook decides what the bucket holds (torch divides nothing for it).
  bool averages() const override { return false; }

 private:
  std::unique_ptr<c10d::CommHookInterface> hook_;
  std::map<size_t, c10::intrusive_ptr<c10::ivalue::Future>> pending_;
};

}  // namespace paisoar::python
