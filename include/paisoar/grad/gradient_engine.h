// GradientEngine: the one backward protocol under DDP and ZeRO. It hooks each
// parameter's gradient accumulator, counts per group (DDP's buckets, ZeRO's
// units) which gradients are in, tells its GradientSink when a group is
// complete, and at the end of a synchronised backward agrees with every rank
// on which parameters got a gradient and on the first error, so that every
// rank fails together with the same message instead of leaving peers waiting.
//
// It takes a list of parameters, not a module: anything that owns tensors
// with gradients (a torch::nn::Module, a Python parameter list) can use it.
#pragma once

#include <torch/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "paisoar/grad/gradient_sink.h"

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::grad {

struct NamedParameter {
  std::string name;
  torch::Tensor tensor;  // requires grad; its accumulator must not change while the engine lives
};

struct EngineOptions {
  // Who raised an error, first in every message ("DistributedDataParallel").
  std::string component = "GradientEngine";
  // A parameter may get no gradient in a synchronised backward (the forward
  // left it out): it counts as zero on the ranks that missed it. false: an
  // error on every rank naming the parameter and `find_unused_option`.
  bool find_unused_parameters = false;
  std::string find_unused_option = "find_unused_parameters";
  // How messages write a boolean for that option: true (C++ `= true`) or
  // Python (`=True`, for a Python user's keyword argument).
  bool python_literals = false;
  // One synchronised backward per forward (DDP): a second one before
  // begin_forward() is an error, since its gradients would not be averaged.
  bool one_backward_per_forward = false;
  // torch's DDP instead: a backward averages only when a forward with grad
  // enabled (begin_forward) ran since the last synchronised one; any other
  // backward (a second one, or one of a nested wrapper's forward) only
  // accumulates, as torch's reducer ignores hooks it does not expect.
  bool sync_only_after_forward = false;
  // The graph is the same every iteration (torch's static_graph): the first
  // synchronised backward launches every group at its end and learns how many
  // gradients each parameter gets per backward (0: unused, 2: used twice, as
  // by two forwards or reentrant checkpointing); later ones launch a group
  // when those counts are reached. A later backward that differs is an error.
  bool static_graph = false;
  // Parameters that got no gradient on some rank (find_unused_parameters off)
  // raise at the next begin_forward() instead of at the end of backward, as
  // torch's DDP does ("Expected to have finished reduction in the prior
  // iteration"); the backward itself completes, their gradients counted as zero.
  bool missing_gradient_error_at_next_forward = false;
};

// What the last synchronised backward cost, for the profiler.
struct BackwardStats {
  double backward_s = 0;      // first gradient in -> the end-of-backward callback
  double exposed_comm_s = 0;  // the end of backward waiting on the sink's collectives and the agreement
  int64_t agreement_bytes = 0;
};

// Thread safety: the training thread calls every method; autograd's threads
// run the hooks. One mutex guards the per-backward state, and the sink's
// methods run with it held.
class GradientEngine {
 public:
  // `groups` lists every parameter index once. Registers the hooks.
  GradientEngine(std::vector<NamedParameter> params, std::vector<std::vector<size_t>> groups,
                 GradientSink& sink, std::shared_ptr<comm::Communicator> comm, EngineOptions options);
  ~GradientEngine();
  GradientEngine(const GradientEngine&) = delete;
  GradientEngine& operator=(const GradientEngine&) = delete;

  // false: the next backward only accumulates locally (gradient accumulation);
  // the next one with sync on averages the sum. Read when a backward starts.
  void set_sync(bool on);
  bool sync() const;

  // A new forward begins: forgets a backward that an exception interrupted
  // (after the sink drained what it launched) and allows the next
  // synchronised backward (one_backward_per_forward). Throws the error the
  // last synchronised backward left for it (missing_gradient_error_at_next_forward).
  void begin_forward();
  // Turns static_graph on. REQUIRES: no synchronised backward has run yet
  // (else throws naming `caller`).
  void set_static_graph(const std::string& caller);
  // A rank that has no input left (torch's join()): the collectives of one
  // synchronised backward of the other ranks, in their order, with no
  // gradient of its own: the sink shadows its collectives, the agreement
  // counts this rank as joined (so the others' parameters are not missing
  // here), and the rebuild. Collective with the others' backward.
  void shadow_backward();
  // With find_unused_parameters: the parameters that `outputs`' graph does
  // not reach are known missing, so their groups need not wait for them.
  void mark_unreachable(const std::vector<torch::Tensor>& outputs);

  // Regroups the parameters. REQUIRES: no backward is running, or called from
  // GradientSink::synchronised.
  void set_groups(std::vector<std::vector<size_t>> groups);
  const std::vector<std::vector<size_t>>& groups() const { return groups_; }
  size_t group_of(size_t param) const { return group_of_[param]; }

  const std::vector<NamedParameter>& parameters() const { return params_; }
  // The parameter's gradient accumulator is not the one hooked (the tensor
  // was replaced or converted): its hook would never fire.
  bool accumulator_replaced(size_t param) const;
  bool in_backward() const;
  const BackwardStats& last_stats() const { return stats_; }
  const std::string& component() const { return options_.component; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Hook;

  void on_gradient(size_t index);
  void start_backward();
  void mark_ready(size_t index);
  void group_complete(size_t group);  // tells the sink, by the running backward's mode
  void on_static_gradient(size_t index);
  void check_static_counts();
  // The names and indices of the parameters that got no gradient here, and of those only other ranks missed.
  std::string missing_lines(const std::vector<size_t>& here, const std::vector<size_t>& elsewhere) const;
  void finish_synchronised();
  // The end-of-backward agreement (launched after the sink's collectives,
  // waited after them): every rank's counts of used parameters, error flags
  // and joined ranks. Returns the summed status; throws the lowest failing
  // rank's message on every rank.
  std::vector<int> agree(bool joined);
  void check_missing(const std::vector<int>& status);
  void record_error(const std::string& message);
  void reset_backward();
  std::string option_set_to(bool value) const;

  std::vector<NamedParameter> params_;
  std::vector<std::vector<size_t>> groups_;
  std::vector<size_t> group_of_;
  GradientSink& sink_;
  std::shared_ptr<comm::Communicator> comm_;
  EngineOptions options_;
  std::vector<std::unique_ptr<Hook>> hooks_;

  mutable std::mutex mutex_;
  bool sync_ = true;
  bool in_backward_ = false;     // a backward's first hook ran, its callback not yet
  bool synchronised_ = false;    // the running backward averages (sync_ when it started)
  bool finished_ = false;        // a synchronised backward ended since begin_forward()
  bool armed_ = false;           // sync_only_after_forward: a forward with grad enabled since then
  std::vector<char> ready_;      // gradient in (or known missing) in this backward
  std::vector<char> unreachable_;
  std::vector<char> used_;       // a gradient since the last synchronised backward (local ones too)
  std::vector<char> created_;    // zero-filled by the sink since the last synchronised backward
  std::vector<size_t> pending_;  // per group, gradients not in yet
  std::vector<size_t> arrival_;  // this backward's hook order
  std::string error_;            // the first error since the last synchronised backward
  std::string next_forward_error_;  // thrown by the next begin_forward()
  // static_graph: gradients per parameter per backward, learned in the first
  // synchronised backward (expected_hooks_), counted in the running one (hooks_seen_).
  bool static_learned_ = false;
  bool synchronised_once_ = false;
  std::vector<int> expected_hooks_;
  std::vector<int> hooks_seen_;
  Clock::time_point first_ready_;
  BackwardStats stats_;
};

}  // namespace paisoar::grad
