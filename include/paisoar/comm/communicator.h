// Communicator: a process group over c10d (Gloo on CPU, NCCL on CUDA) with
// asynchronous collectives (on Gloo with paisoar's own reduce-scatter and flat
// allgather, faster than Gloo's), subgroups, and errors that name their cause.
#pragma once

#include <c10/util/intrusive_ptr.h>
#include <torch/types.h>

#include <memory>
#include <string>
#include <vector>

#include "paisoar/comm/env.h"
#include "paisoar/comm/store.h"
#include "paisoar/comm/types.h"
#include "paisoar/comm/work.h"

namespace c10d {
class ProcessGroup;
}

namespace paisoar::comm {

namespace detail {
struct GroupState;
}

// Contract (as in torch.distributed): every rank of a group issues the same
// collectives in the same order with tensors of the same dtype and shape.
// Collectives take tensors by handle and write results in place; the tensors
// must stay unmodified until the returned Work's wait() returns.
// Thread safety: collectives on one Communicator may be issued from one thread
// at a time (Gloo matches operations by issue order).
class Communicator : public std::enable_shared_from_this<Communicator> {
 public:
  // Joins the job described by the environment (see rank_info_from_env): under
  // `paisoar launch` every rank connects to the launcher's store
  // (PAISOAR_STORE_ADDR/PORT) with the job token; otherwise rank 0 hosts a
  // TCPStore at MASTER_ADDR:MASTER_PORT and the others connect to it. The
  // environment may override `options` (see comm_options_from_env); create()
  // reads nothing from it.
  static std::shared_ptr<Communicator> from_env(const CommOptions& options = {});
  // Joins a group of `size` ranks that share `store` (threads over Store::hash() in tests).
  // Collective: blocks until all `size` ranks joined (or the timeout). May be called
  // again over the same store (e.g. after a failure); each call forms a new group.
  static std::shared_ptr<Communicator> create(const Store& store, int rank, int size,
                                              const CommOptions& options = {});
  // paisoar's group over the ranks and store of a group that
  // torch.distributed created (Python's default group, or any group from it):
  // the same members and ranks, paisoar's transports (as create()). Collective
  // over the group's ranks, like create(); `global_ranks` are the members'
  // ranks in torch's default group (empty: 0..size-1).
  static std::shared_ptr<Communicator> over_process_group(
      const c10::intrusive_ptr<::c10d::ProcessGroup>& group, const std::vector<int>& global_ranks = {},
      const CommOptions& options = {});
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  const std::string& name() const;  // "world", or "world/g<N>" for subgroups
  // What carries CPU tensors: "gloo", "paisoar-shm" or "paisoar-threads".
  std::string backend_name() const;
  // The global (world) rank of each member, indexed by rank in this group.
  const std::vector<int>& global_ranks() const;
  const CommOptions& options() const;
  Store store() const;

  // --- collectives (all asynchronous: call wait() on the result) ---
  // In place over `tensor`. Floating types incl. bf16 (reduced in fp32) and
  // integers; not bool or complex. Avg is not defined for integer tensors.
  Work allreduce(torch::Tensor tensor, ReduceOp op = ReduceOp::Sum);
  // Several tensors in one operation per dtype (flattened into one buffer each).
  Work allreduce_coalesced(std::vector<torch::Tensor> tensors, ReduceOp op = ReduceOp::Sum);
  Work broadcast(torch::Tensor tensor, int root);
  // outputs[r] receives rank r's `input`; outputs must match input's dtype and shape.
  Work allgather(std::vector<torch::Tensor> outputs, torch::Tensor input);
  // `output` (contiguous, numel = size() * input.numel()) receives the inputs of
  // ranks 0..size()-1 one after another.
  Work allgather_into(torch::Tensor output, torch::Tensor input);
  // `input` (numel = size() * output.numel()) is reduced across ranks and rank r
  // keeps chunk r in `output` (which may be that chunk of `input`: in place).
  // Moves (N-1)/N of `input` per rank, half of what an allreduce moves.
  Work reduce_scatter(torch::Tensor output, torch::Tensor input, ReduceOp op = ReduceOp::Sum);
  Work barrier();
  // Point to point, `peer` is a rank in this group. `tag` tells apart messages between the
  // same pair of ranks.
  Work send(torch::Tensor tensor, int peer, int tag = 0);
  Work recv(torch::Tensor tensor, int peer, int tag = 0);

  // --- groups ---
  // A group of the given ranks of this communicator (sorted; rank in the new group =
  // position). Collective over this communicator: EVERY rank calls new_group with the
  // same list, in the same order as other new_group calls; non-members get nullptr.
  std::shared_ptr<Communicator> new_group(std::vector<int> ranks);

  // Internal: the state shared with Work and the backends.
  detail::GroupState& state();

 private:
  explicit Communicator(std::unique_ptr<detail::GroupState> state);
  std::unique_ptr<detail::GroupState> state_;
};

}  // namespace paisoar::comm
