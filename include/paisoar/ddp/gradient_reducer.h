// GradientReducer: averages a model's gradients across ranks during backward.
// Gradients live in flat bucket buffers; a bucket's collective starts as soon
// as its last gradient is accumulated, and the end of backward waits for the
// rest. DistributedDataParallel drives it; use it directly to wrap a forward
// that is not a module call.
#pragma once

#include <torch/nn/module.h>

#include <memory>
#include <vector>

#include "paisoar/ddp/bucket_span.h"
#include "paisoar/ddp/comm_hook.h"
#include "paisoar/ddp/options.h"

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::ddp {

// What the last synchronised backward cost, for the profiler.
struct ReducerStats {
  double backward_s = 0;        // first gradient ready -> end of backward's own work
  double exposed_comm_s = 0;    // time backward waited on communication at its end
  int64_t bytes = 0;            // bytes handed to collectives (payload, this rank)
  size_t buckets = 0;
  bool rebuilt = false;         // the buckets were rebuilt at the end of this step
  std::vector<BucketSpan> bucket_spans;  // one per bucket, in launch order
};

class GradientReducer {
 public:
  // Collective (every rank, same model): checks that every rank holds the same
  // parameter names, shapes and dtypes (c10::Error naming the first
  // difference, on every rank), broadcasts parameters and buffers from rank 0,
  // buckets the gradients and registers the backward hooks. Move or convert
  // the model before, not after: the buckets keep the dtype they were built with.
  GradientReducer(std::shared_ptr<torch::nn::Module> module,
                  std::shared_ptr<comm::Communicator> comm, DdpOptions options = {});
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Before each forward: syncs buffers and arms the hooks for the coming
  // backward (unless sync is off). Collective when broadcast_buffers is on.
  void pre_forward();
  // Arms the hooks for the coming backward as pre_forward does, without
  // syncing the buffers: for a pipeline stage's last backward, whose
  // forward already ran (BatchNorm saved its running statistics for
  // backward; rewriting them in place would fail it). Not collective.
  void prepare_backward();
  // After forward, with its outputs: finds the parameters the graph does not
  // reach (find_unused_parameters only), so their buckets need not wait.
  void post_forward(const std::vector<torch::Tensor>& outputs);

  // false: backward accumulates gradients locally (gradient accumulation);
  // the next backward with sync on averages the accumulated sum.
  void set_sync(bool on);
  bool sync() const;

  // Replaces the per-bucket averaging (default: from options.compression).
  void set_comm_hook(std::unique_ptr<CommHook> hook);

  // Turns DdpOptions::static_graph on. REQUIRES: before the first
  // synchronised backward (else throws).
  void set_static_graph();
  // Uneven inputs (torch's join()): this rank has no input left; issues the
  // collectives of one synchronised backward of the other ranks, contributing
  // zero gradients, and leaves its own gradients alone. Collective.
  void shadow_backward();
  // The averaged gradients are sum / divisor (default: the number of ranks;
  // join(divide_by_initial_world_size=False): the ranks not joined yet).
  // Applies to hooks that average (CommHook::averages()).
  void set_gradient_divisor(double divisor);
  // Collective over the reducer's group: rank `root`'s values of `tensors`
  // (e.g. the module's buffers as they are now) on every rank, one broadcast
  // per dtype and device.
  void broadcast(const std::vector<torch::Tensor>& tensors, int root) const;

  const ReducerStats& last_stats() const;
  // Parameter indices of each bucket, in launch order (for tests and tools).
  std::vector<std::vector<size_t>> bucket_assignment() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace paisoar::ddp
