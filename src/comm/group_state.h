// GroupState: what a Communicator owns (store, c10d groups, identity) and the
// helpers every collective uses (backend choice, error context, call checks).
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "paisoar/comm/store.h"
#include "paisoar/comm/types.h"
#include "src/comm/c10d_types.h"
#include "src/comm/scratch_pool.h"

namespace gloo::transport {
class Device;
}

namespace paisoar::comm::detail {

class WorkImpl;

// Owned by one Communicator; mutated only by the thread that issues its
// collectives (see Communicator's thread-safety contract).
struct GroupState {
  explicit GroupState(Store group_store) : store(std::move(group_store)) {}

  Store store;  // already prefixed for this group
  int rank = 0;
  int size = 1;
  std::string name;
  std::vector<int> global_ranks;
  CommOptions options;
  std::shared_ptr<::gloo::transport::Device> gloo_device;  // null under Backend::Threads
  C10dGroupPtr cpu;   // Gloo, shm, or the in-process group under Backend::Threads
  C10dGroupPtr nccl;  // created on the first CUDA collective (Backend::Auto/Nccl)
  // Receive buffers; shared so that a Work outliving its Communicator can return one.
  std::shared_ptr<ScratchPool> scratch = std::make_shared<ScratchPool>();
  // Point-to-point works of collectives, kept alive until they complete even if
  // the caller dropped its Work (see keep_until_complete).
  std::vector<std::shared_ptr<WorkImpl>> in_flight;
  int64_t groups_created = 0;
  int64_t issued = 0;  // collectives (not send/recv) issued so far; numbers them in errors and tags
  int flight_group = -2;  // this group's index in options.flight_recorder (-2: not registered yet)

  // The c10d group that runs collectives on tensors of `device`.
  C10dGroup& backend_for(const at::Tensor& tensor);
  // Forms `cpu` over `store` (Gloo over gloo_device, shared memory, or in-process;
  // Auto takes shared memory when ranks_share_memory); collective.
  void form_cpu_group();
  // Whether `group` is this group's NCCL backend (native reduce-scatter,
  // allgather into one tensor, AVG and bf16 reductions).
  bool is_nccl(const C10dGroup& group) const { return nccl && &group == nccl.get(); }
  // Whether `group` has its own reduce-scatter and allgather into one tensor
  // (NCCL, or the shm backend), so the pairwise exchange built for Gloo is not used.
  bool has_flat_collectives(const C10dGroup& group) const {
    return is_nccl(group) || (cpu_is_shm && &group == cpu.get());
  }
  bool cpu_is_shm = false;  // set by form_cpu_group
  // Adds `works` to in_flight and drops the ones that completed.
  void keep_until_complete(const std::vector<std::shared_ptr<WorkImpl>>& works);
  // "allreduce #12 on rank 1 of group 'world' (size 2)", the prefix of every error.
  std::string describe(const std::string& op) const;
};

// Called before each collective: numbers it and, when check_collectives is on,
// verifies that every rank issues the same op over the same dtype and shape;
// throws CommError(Mismatch) naming the differing ranks otherwise.
// `tensor` may be undefined (barrier). `arg` is the root/peer/reduce op.
std::string begin_collective(GroupState& state, const char* op, const at::Tensor& tensor,
                             int64_t arg);

// The Work of collective #issued (`op` over `probe`'s dtype and number of
// elements; probe may be undefined), recorded in the flight record when
// there is one and the group has more than one rank. Called once the
// arguments are checked, so a refused call leaves no record.
std::shared_ptr<WorkImpl> collective_work(GroupState& state, const std::string& context, const char* op,
                                          const at::Tensor& probe);
// The same for a send or recv to or from group rank `peer`.
std::shared_ptr<WorkImpl> transfer_work(GroupState& state, const std::string& context, const char* op,
                                        const at::Tensor& tensor, int peer);

// Wraps a failure at submission or completion into a CommError with the likely cause.
[[noreturn]] void throw_comm_error(const std::string& context, const std::string& what,
                                   std::chrono::milliseconds timeout);

}  // namespace paisoar::comm::detail
