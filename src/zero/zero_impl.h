// ZeroOptimizer::Impl, shared by the files that implement it:
// zero_optimizer.cpp (construction, the shard, step, memory),
// grad_sharding.cpp (the GradientSink: unit buffers, reduce-scatter per unit)
// and param_gather.cpp (stage 3: gathering and freeing layer parameters).
// The backward protocol itself (hooks, readiness, the end-of-backward
// agreement across ranks) is the GradientEngine's, as for DDP.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "paisoar/comm/work.h"
#include "paisoar/grad/gradient_engine.h"
#include "paisoar/zero/zero_optimizer.h"

namespace paisoar::zero {

class ZeroOptimizer::Impl final : public grad::GradientSink {
 public:
  struct Param {
    torch::Tensor tensor;
    std::string name;
  };
  // One unit: a flat buffer of its parameters (model dtype), padded to a
  // multiple of the world size; this rank owns elements [rank*chunk, (rank+1)*chunk).
  struct Unit {
    torch::Tensor full;        // the parameters; stage 3: storage freed between uses
    torch::Tensor full_grad;   // the gradients; stage 1: always, else only during backward
    torch::Tensor master;      // fp32 chunk the optimizer updates (may alias `full`)
    torch::Tensor grad_chunk;  // fp32 averaged gradient chunk (may alias `full_grad`)
    torch::Tensor reduced;     // reduce-scatter output when it cannot be grad_chunk
    torch::Tensor reduce_in;   // reduce-scatter input when it is not full_grad (ZeroOptions::reduce_dtype)
    bool ready = false;        // every gradient in, in this synchronised backward
    comm::Work reduce_work;
    comm::Work gather_work;
    bool gathered = false;     // stage 3: `full` holds the parameters
    bool gathering = false;    // stage 3: a gather is in flight
  };

  Impl(ZeroOptimizer& owner, std::shared_ptr<torch::nn::Module> model,
       std::shared_ptr<comm::Communicator> comm, OptimizerFactory factory, ZeroOptions options);
  ~Impl();

  // --- construction (zero_optimizer.cpp)
  std::vector<std::vector<size_t>> plan_units() const;
  std::vector<std::vector<size_t>> units_named() const;  // ZeroOptions::units as indices
  void build_units();
  void build_shard(const OptimizerFactory& factory);
  bool master_aliases_full() const;
  bool chunk_aliases_grad() const;
  torch::Tensor own_chunk(const torch::Tensor& full) const;

  // --- gradients (grad_sharding.cpp): the GradientSink, run by the engine with its mutex held
  void start_engine();
  bool adopt(size_t param) override;
  void group_ready(size_t unit) override;
  void local_group_done(size_t unit) override;
  void launch_remaining() override;
  void wait_all() override;
  void drain() noexcept override;
  void end_backward(bool synchronised) noexcept override;
  void ensure_full_grad(size_t u);
  void launch_ready_units();
  void launch_reduce(size_t u);
  // Waits for unit u's reduce-scatter and keeps what this stage keeps of it:
  // the averaged chunk; stage 1 also zeroes the other chunks, stages 2-3
  // release the unit's full gradient buffer.
  void complete_reduce(size_t u);
  void release_full_grads();

  // --- parameters (zero_optimizer.cpp for 1-2, param_gather.cpp for 3)
  void publish();
  void gather_async(size_t u);
  void wait_gathered(size_t u);
  void free_params(size_t u);
  // Stage 3: layer k's forward between its gather and its release, its output
  // routed through the function that re-gathers it before its backward.
  torch::Tensor run_in_units(const std::vector<size_t>& units, const torch::Tensor& x,
                             const std::function<torch::Tensor(const torch::Tensor&)>& fn);
  void unit_forward_begin(size_t k);  // gather k, prefetch k+1
  void unit_forward_end(size_t k);    // release k
  void on_pre_backward(size_t k);     // gather k, prefetch k-1

  ZeroOptimizer& owner_;
  std::shared_ptr<torch::nn::Module> model_;
  std::shared_ptr<comm::Communicator> comm_;
  ZeroOptions options_;
  int rank_ = 0, world_ = 1;
  std::vector<Param> params_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<std::string> names_;
  torch::ScalarType dtype_ = torch::kFloat;
  std::unique_ptr<ShardLayout> layout_;
  std::vector<Unit> units_;
  std::vector<size_t> order_;  // units in the order backward completes them
  std::vector<ShardParam> shard_;
  std::unique_ptr<torch::optim::Optimizer> inner_;

  // Stage 3's gather state, against autograd's threads (lock order: the
  // engine's mutex, then this one).
  std::mutex mutex_;
  size_t next_launch_ = 0;    // position in order_ of the first unit not launched
  size_t next_complete_ = 0;  // position in order_ of the first unit not completed
  // Last: its hooks are removed before the units they write into go.
  std::unique_ptr<grad::GradientEngine> engine_;
};

}  // namespace paisoar::zero
