// GradientReducer::Impl, shared by the two files that implement it:
// gradient_reducer.cpp (the per-step protocol: hooks, launching, the end of
// backward) and reducer_buckets.cpp (the bucket storage the gradients live in).
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/util/torch_api.h"

#include "paisoar/ddp/gradient_reducer.h"

namespace paisoar::ddp {

class GradientReducer::Impl {
 public:
  using Clock = std::chrono::steady_clock;

  Impl(std::shared_ptr<torch::nn::Module> module, std::shared_ptr<comm::Communicator> comm,
       DdpOptions options);
  ~Impl();

  void pre_forward();
  void post_forward(const std::vector<torch::Tensor>& outputs);
  void on_gradient(size_t index);
  void finalize();

  struct Param {
    torch::Tensor tensor;
    std::string name;
    paisoar::detail::NodePtr accumulator;
    uintptr_t hook_key = 0;
    size_t bucket = 0;
    int64_t offset = 0;  // element offset in its bucket
  };
  struct Bucket {
    std::vector<size_t> members;
    BucketLayout layout;
    torch::Tensor flat;
    size_t pending = 0;
    Clock::time_point launched;  // this step's launch, for ReducerStats::bucket_spans
  };

  void build_buckets(const std::vector<std::vector<size_t>>& plan);
  // Makes parameter i's gradient the alias of its bucket slice (copying a
  // gradient something else allocated, zeroing an undefined one).
  void adopt_gradient(size_t i);
  void launch_ready_buckets();
  // Marks the parameters post_forward found unreachable as ready (at the first
  // gradient of backward, so nothing is launched before backward starts).
  void mark_unused_ready();
  // Records the first error of this backward; finalize raises it on every rank
  // after all collectives ran, so no rank is left waiting.
  void record_error(const std::string& message);
  // Forgets this backward's progress (not the usage counts of no_sync passes).
  void reset_iteration();
  // Waits for buckets a failed backward launched, so later collectives pair up.
  void drain_launched_buckets();
  // Throws if a parameter changed dtype/device or lost its accumulator (the
  // hooks would silently never fire).
  void check_parameters_unchanged() const;
  void check_everyone_used_everything(const torch::Tensor& used_counts);
  bool rebuild_in_arrival_order();

  std::shared_ptr<torch::nn::Module> module_;
  std::shared_ptr<comm::Communicator> comm_;
  DdpOptions options_;
  int64_t first_cap_bytes_, cap_bytes_;
  std::vector<Param> params_;
  std::vector<torch::Tensor> buffers_;
  std::vector<Bucket> buckets_;
  std::unique_ptr<CommHook> hook_;

  // Per-iteration state, owned by the thread running forward and backward;
  // mutex_ guards it against autograd engine threads (CUDA device threads).
  std::mutex mutex_;
  bool sync_ = true;
  bool armed_ = false;           // the coming backward must be synchronised
  bool local_pass_ = false;      // the coming backward accumulates locally (no_sync)
  bool finished_ = false;        // this forward's synchronised backward is done
  bool callback_queued_ = false;
  size_t next_bucket_ = 0;       // first bucket not launched yet
  std::vector<char> ready_;      // gradient in (or known unused)
  std::vector<char> unused_;     // not reachable from forward's outputs
  std::vector<char> used_;       // gradient produced since the last sync (no_sync passes too)
  std::vector<char> created_;    // gradient was undefined and zero-filled since the last sync
  std::vector<size_t> arrival_;  // hook order, for the rebuild
  std::string error_;            // first error of this backward
  bool rebuilt_ = false;
  Clock::time_point first_ready_;
  ReducerStats stats_;
};

}  // namespace paisoar::ddp
