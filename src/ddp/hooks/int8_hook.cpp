// The int8 hook: each rank quantizes its bucket with its own scale (absmax /
// 127), keeps what rounding lost for the next step (error feedback), and the
// ranks allgather [scale | int8 values] and average the dequantized sums. The
// payload is a quarter of fp32's; with allgather the bytes each rank receives
// grow with the number of ranks, which pays off for small groups (2-4 ranks).
#include <torch/torch.h>

#include <cstring>
#include <limits>
#include <map>

#include "paisoar/comm/communicator.h"
#include "src/ddp/hooks/builtin_hooks.h"

namespace paisoar::ddp::detail {
namespace {

constexpr int64_t kHeader = sizeof(float);  // the scale, before the values

class Int8Hook : public CommHook {
 public:
  Int8Hook(std::shared_ptr<comm::Communicator> comm, bool error_feedback)
      : comm_(std::move(comm)), error_feedback_(error_feedback) {}

  void launch(size_t bucket, const torch::Tensor& flat, const BucketLayout&) override {
    torch::NoGradGuard no_grad;
    const int64_t n = flat.numel();
    auto& state = state_[bucket];
    if (!state.packed.defined() || state.packed.numel() != kHeader + n) {
      // The packing goes through host memory: the scale header is written by memcpy.
      state.packed = torch::empty({kHeader + n}, torch::kUInt8);
      state.gathered = torch::empty({comm_->size() * (kHeader + n)}, torch::kUInt8);
      state.residual = torch::zeros({n}, torch::kFloat);
    }
    torch::Tensor e = flat.to(torch::kCPU, torch::kFloat, /*non_blocking=*/false, /*copy=*/true);
    if (error_feedback_) e.add_(state.residual);
    const float absmax = e.abs().max().item<float>();
    float scale = absmax > 0 ? absmax / 127.0f : 1.0f;
    torch::Tensor q;
    if (std::isfinite(absmax)) {
      q = e.div(scale).round_().clamp_(-127, 127).to(torch::kInt8);
      if (error_feedback_) state.residual = e.sub_(q.to(torch::kFloat).mul_(scale));
    } else {
      // An overflow (e.g. the GradScaler's first steps) must reach every rank
      // as inf/NaN, so the scaler skips the step; the residual is kept.
      scale = std::numeric_limits<float>::quiet_NaN();
      q = torch::zeros({n}, torch::kInt8);
    }
    std::memcpy(state.packed.data_ptr<uint8_t>(), &scale, sizeof(float));
    state.packed.narrow(0, kHeader, n).copy_(q.view(torch::kUInt8));
    count_bytes(state.packed);
    state.pending = comm_->allgather_into(state.gathered, state.packed);
  }

  void finish(size_t bucket, const torch::Tensor& flat, const BucketLayout&) override {
    torch::NoGradGuard no_grad;
    auto& state = state_.at(bucket);
    state.pending.wait();
    const int64_t n = flat.numel();
    torch::Tensor sum = torch::zeros({n}, torch::kFloat);
    for (int r = 0; r < comm_->size(); ++r) {
      const int64_t at = r * (kHeader + n);
      float scale;
      std::memcpy(&scale, state.gathered.data_ptr<uint8_t>() + at, sizeof(float));
      sum.add_(state.gathered.narrow(0, at + kHeader, n).view(torch::kInt8).to(torch::kFloat), scale);
    }
    flat.copy_(sum.div_(comm_->size()));  // a NaN scale from any rank makes it NaN
  }

  void reset() override { state_.clear(); }

 private:
  struct State {
    torch::Tensor packed, gathered, residual;
    comm::Work pending;
  };
  std::shared_ptr<comm::Communicator> comm_;
  bool error_feedback_;
  std::map<size_t, State> state_;
};

}  // namespace

std::unique_ptr<CommHook> make_int8_hook(std::shared_ptr<comm::Communicator> comm,
                                         const CompressionOptions& options) {
  return std::make_unique<Int8Hook>(std::move(comm), options.error_feedback);
}

}  // namespace paisoar::ddp::detail
