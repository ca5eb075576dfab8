// Communicator: creating groups (from the environment, from a store, subgroups)
// and choosing the c10d backend for a tensor. Collectives are in collectives.cpp
// and reductions.cpp.
#include "paisoar/comm/communicator.h"
#include "paisoar/error.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>

#include "src/comm/backend.h"
#include "src/comm/bind_address.h"
#include "src/comm/group_state.h"
#include "src/comm/host_identity.h"
#include "src/comm/store_impl.h"
#include "src/comm/work_impl.h"

namespace paisoar::comm {
namespace detail {


C10dGroup& GroupState::backend_for(const at::Tensor& tensor) {
  if (options.backend == Backend::Threads) return *cpu;
  bool cuda = tensor.defined() && tensor.is_cuda();
  if (!cuda) {
    if (options.backend == Backend::Nccl) {
      throw CommError(describe("collective") +
                          ": backend 'nccl' takes CUDA tensors but this one is on the CPU; "
                          "move it with .to(torch::kCUDA) or use backend 'auto'",
                      CommError::Cause::InvalidArgument);
    }
    return *cpu;
  }
  if (options.backend == Backend::Gloo) return *cpu;
  if (!nccl) nccl = make_nccl_group(store.with_prefix("nccl").impl()->store, rank, size,
                                    options.timeout);
  return *nccl;
}

void GroupState::keep_until_complete(const std::vector<std::shared_ptr<WorkImpl>>& works) {
  in_flight.erase(std::remove_if(in_flight.begin(), in_flight.end(),
                                 [](const auto& w) { return w->is_completed(); }),
                  in_flight.end());
  in_flight.insert(in_flight.end(), works.begin(), works.end());
}

void GroupState::form_cpu_group() {
  const C10dStorePtr& c10d_store = store.impl()->store;
  switch (options.backend) {
    case Backend::Threads: cpu = make_thread_group(store, rank, size, options.timeout); return;
    case Backend::Shm:
      cpu = make_shm_group(store, rank, size, options.timeout);
      cpu_is_shm = true;
      return;
    case Backend::Auto:
      if (size > 1 && ranks_share_memory(store, rank, size)) {
        try {
          cpu = make_shm_group(store, rank, size, options.timeout);
          cpu_is_shm = true;
          return;
        } catch (const c10::Error& e) {  // agreed by every rank (ShmSegment)
          TORCH_WARN("paisoar: group '", name, "' uses Gloo: its ranks share a host but not shared memory (",
                     e.what_without_backtrace(), ")");
        }
      }
      break;
    default: break;
  }
  cpu = make_gloo_group(c10d_store, rank, size, options.timeout, gloo_device);
}

std::string GroupState::describe(const std::string& op) const {
  return op + " #" + std::to_string(issued) + " on rank " + std::to_string(rank) +
         " of group '" + name + "' (size " + std::to_string(size) + ")";
}

}  // namespace detail

Communicator::Communicator(std::unique_ptr<detail::GroupState> state)
    : state_(std::move(state)) {}

Communicator::~Communicator() = default;

std::shared_ptr<Communicator> Communicator::create(const Store& store, int rank, int size,
                                                   const CommOptions& options) {
  if (size < 1 || rank < 0 || rank >= size) {
    C10_THROW_ERROR(ValueError, "Communicator::create: rank " + std::to_string(rank) +
                                " is not in a group of size " + std::to_string(size));
  }
  // Each create() over the same store (a job restarted in-process, several worlds
  // in one test) gets fresh keys: every rank counts its own calls identically.
  const int64_t generation = store.add("paisoar/generation/" + std::to_string(rank), 1);
  auto state = std::make_unique<detail::GroupState>(
      store.with_prefix("world." + std::to_string(generation)));
  state->rank = rank;
  state->size = size;
  state->name = "world";
  for (int r = 0; r < size; ++r) state->global_ranks.push_back(r);
  state->options = options;
  if (state->options.segment_bytes < 1024) {
    C10_THROW_ERROR(ValueError, "CommOptions::segment_bytes (PAISOAR_SEGMENT_BYTES) is " +
                                std::to_string(state->options.segment_bytes) +
                                ": use at least 1024 bytes (default 1 MiB)");
  }
  // Bind where the route to the store's host leaves this machine (loopback for an
  // in-process or loopback store), unless told otherwise.
  const auto& store_host = store.impl()->host;
  std::string address = !options.bind_address.empty() ? options.bind_address
                        : store_host.empty()
                            ? "127.0.0.1"
                            : detail::local_address_towards(store_host, store.port());
  try {
    if (options.backend != Backend::Threads && options.backend != Backend::Shm) {
      state->gloo_device = detail::make_gloo_device(address, options.socket_ifname);
    }
    state->form_cpu_group();
  } catch (const std::exception& e) {
    throw CommError("could not form group 'world' as rank " + std::to_string(rank) + " of " +
                        std::to_string(size) + " (bound to " + address + "): " + error_text(e) +
                        "\n  check that all " + std::to_string(size) +
                        " ranks were started with the same MASTER_ADDR/MASTER_PORT and that "
                        "this address is reachable from the other nodes",
                    CommError::Cause::Other);
  }
  return std::shared_ptr<Communicator>(new Communicator(std::move(state)));
}

std::shared_ptr<Communicator> Communicator::from_env(const CommOptions& base) {
  const EnvMap env = process_env();
  const RankInfo info = rank_info_from_env(env);
  const CommOptions options = comm_options_from_env(env, base);
  // A single rank needs no rendezvous (and must not take the master port).
  if (info.world_size == 1) return create(Store::hash(), 0, 1, options);
  // Under `paisoar launch` every rank is a client of the launcher's store,
  // with keys of its own per attempt, so a restarted group never reads what
  // the previous attempt wrote; elsewhere (torchrun, srun, mpirun) rank 0
  // hosts a store at the master.
  Store store = info.store_port > 0
                    ? Store::launcher(info.store_addr, info.store_port, info.job_token,
                                      options.timeout)
                          .with_prefix("paisoar/attempt_" + std::to_string(info.restart_count))
                    : Store::tcp(info.master_addr, info.master_port, info.rank == 0,
                                 info.world_size, options.timeout);
  return create(store, info.rank, info.world_size, options);
}

std::shared_ptr<Communicator> Communicator::new_group(std::vector<int> ranks) {
  auto& parent = *state_;
  std::sort(ranks.begin(), ranks.end());
  std::string listed;
  for (int r : ranks) {
    if (!listed.empty()) listed += ',';
    listed += std::to_string(r);
  }
  if (ranks.empty() || std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end() ||
      ranks.front() < 0 || ranks.back() >= parent.size) {
    C10_THROW_ERROR(ValueError, "new_group([" + listed + "]) on group '" + parent.name +
                                "' of size " + std::to_string(parent.size) +
                                ": ranks must be distinct and in [0, " +
                                std::to_string(parent.size) + ")");
  }
  std::string prefix = "g" + std::to_string(parent.groups_created++);
  auto me = std::find(ranks.begin(), ranks.end(), parent.rank);
  if (me == ranks.end()) return nullptr;

  auto state = std::make_unique<detail::GroupState>(parent.store.with_prefix(prefix));
  state->rank = static_cast<int>(me - ranks.begin());
  state->size = static_cast<int>(ranks.size());
  state->name = parent.name + "/" + prefix;
  for (int r : ranks) state->global_ranks.push_back(parent.global_ranks[r]);
  state->options = parent.options;
  state->gloo_device = parent.gloo_device;
  try {
    state->form_cpu_group();
  } catch (const std::exception& e) {
    throw CommError("could not form subgroup [" + listed + "] of '" + parent.name +
                        "' on rank " + std::to_string(parent.rank) + ": " + error_text(e) +
                        "\n  every rank must call new_group with the same ranks in the "
                        "same order",
                    CommError::Cause::Other);
  }
  return std::shared_ptr<Communicator>(new Communicator(std::move(state)));
}

int Communicator::rank() const { return state_->rank; }
int Communicator::size() const { return state_->size; }
const std::string& Communicator::name() const { return state_->name; }

std::string Communicator::backend_name() const {
  if (!state_->cpu && !state_->nccl) return "released";
  return state_->cpu->getBackendName();
}
const std::vector<int>& Communicator::global_ranks() const { return state_->global_ranks; }
const CommOptions& Communicator::options() const { return state_->options; }
Store Communicator::store() const { return state_->store; }
detail::GroupState& Communicator::state() { return *state_; }

}  // namespace paisoar::comm
