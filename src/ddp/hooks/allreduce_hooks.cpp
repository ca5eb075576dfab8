// The plain and the cast-down hooks: one averaging allreduce per bucket, the
// latter over a float16/bfloat16 copy (kept per bucket, reused every step).
#include <torch/torch.h>

#include <map>

#include "paisoar/comm/communicator.h"
#include "src/ddp/hooks/builtin_hooks.h"

namespace paisoar::ddp::detail {
namespace {

class AllreduceHook : public CommHook {
 public:
  explicit AllreduceHook(std::shared_ptr<comm::Communicator> comm) : comm_(std::move(comm)) {}

  void launch(size_t bucket, const torch::Tensor& flat, const BucketLayout&) override {
    count_bytes(flat);
    pending_[bucket] = comm_->allreduce(flat, comm::ReduceOp::Avg);
  }
  void finish(size_t bucket, const torch::Tensor&, const BucketLayout&) override {
    pending_.at(bucket).wait();
  }

 private:
  std::shared_ptr<comm::Communicator> comm_;
  std::map<size_t, comm::Work> pending_;
};

class CastHook : public CommHook {
 public:
  CastHook(std::shared_ptr<comm::Communicator> comm, c10::ScalarType dtype)
      : comm_(std::move(comm)), dtype_(dtype) {}

  void launch(size_t bucket, const torch::Tensor& flat, const BucketLayout&) override {
    auto& low = low_[bucket];
    if (!low.defined() || low.numel() != flat.numel()) low = torch::empty_like(flat, dtype_);
    low.copy_(flat);
    count_bytes(low);
    pending_[bucket] = comm_->allreduce(low, comm::ReduceOp::Avg);
  }
  void finish(size_t bucket, const torch::Tensor& flat, const BucketLayout&) override {
    pending_.at(bucket).wait();
    flat.copy_(low_.at(bucket));
  }
  void reset() override { low_.clear(); }

 private:
  std::shared_ptr<comm::Communicator> comm_;
  c10::ScalarType dtype_;
  std::map<size_t, torch::Tensor> low_;
  std::map<size_t, comm::Work> pending_;
};

}  // namespace

std::unique_ptr<CommHook> make_allreduce_hook(std::shared_ptr<comm::Communicator> comm) {
  return std::make_unique<AllreduceHook>(std::move(comm));
}

std::unique_ptr<CommHook> make_cast_hook(std::shared_ptr<comm::Communicator> comm,
                                         c10::ScalarType dtype) {
  return std::make_unique<CastHook>(std::move(comm), dtype);
}

}  // namespace paisoar::ddp::detail
