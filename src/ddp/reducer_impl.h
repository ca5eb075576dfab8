// GradientReducer::Impl: DDP's GradientSink. The GradientEngine runs the
// backward protocol; this holds what is DDP's own: gradients as aliases of
// flat bucket buffers, the comm hook that averages a bucket, buffer sync, and
// the one-time rebuild of the buckets in arrival order. Shared by
// gradient_reducer.cpp (the per-step face) and reducer_buckets.cpp (storage).
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "paisoar/ddp/gradient_reducer.h"
#include "paisoar/grad/gradient_engine.h"

namespace paisoar::ddp {

class GradientReducer::Impl final : public grad::GradientSink {
 public:
  using Clock = std::chrono::steady_clock;

  Impl(std::shared_ptr<torch::nn::Module> module, std::shared_ptr<comm::Communicator> comm,
       DdpOptions options);

  // --- GradientSink (run by the engine, its mutex held)
  bool adopt(size_t param) override;
  void group_ready(size_t bucket) override;
  void launch_remaining() override;
  void wait_all() override;
  void drain() noexcept override;
  void shadow_launch_all() override;
  void shadow_wait_all() override;
  void unused_everywhere(size_t param, bool created) override;
  void synchronised(const std::vector<size_t>& arrival) override;
  void end_backward(bool synchronised) noexcept override;

  void pre_forward();
  // Throws if a parameter changed dtype/device or lost its accumulator (the
  // hooks would silently never fire).
  void check_parameters_unchanged() const;

  struct Param {
    torch::Tensor tensor;
    std::string name;
    size_t bucket = 0;
    int64_t offset = 0;  // element offset in its bucket
  };
  struct Bucket {
    std::vector<size_t> members;
    BucketLayout layout;
    torch::Tensor flat;
    bool ready = false;          // every gradient in, in this backward
    Clock::time_point launched;  // this step's launch, for ReducerStats::bucket_spans
  };

  void build_buckets(const std::vector<std::vector<size_t>>& plan);
  // gradient_as_bucket_view off: the averaged bucket back into each .grad.
  void copy_back_gradients();
  // Launches the ready buckets that follow the last launched one (the same
  // order on every rank).
  void launch_ready_buckets();
  bool rebuild_in_arrival_order(const std::vector<size_t>& arrival);

  std::shared_ptr<torch::nn::Module> module_;
  std::shared_ptr<comm::Communicator> comm_;
  DdpOptions options_;
  std::vector<int64_t> caps_bytes_;  // per bucket (the last repeats): DdpOptions' caps in bytes
  std::vector<Param> params_;
  std::vector<torch::Tensor> buffers_;
  std::vector<Bucket> buckets_;
  std::unique_ptr<CommHook> hook_;
  size_t next_bucket_ = 0;  // first bucket not launched in this backward
  double divisor_ = 0;      // set_gradient_divisor; 0: the number of ranks
  std::vector<torch::Tensor> shadow_flats_;  // shadow_backward's zero buckets
  bool rebuilt_ = false;
  ReducerStats stats_;      // of the last synchronised backward
  ReducerStats building_;   // of the running one
  // Last: its hooks are removed before the buckets they write into go.
  std::unique_ptr<grad::GradientEngine> engine_;
};

}  // namespace paisoar::ddp
