// Communicator::over_process_group: a Communicator whose collectives run on
// the backends of a c10d::ProcessGroup that torch.distributed created, so that
// Python's DistributedDataParallel and GradScaler work over the user's own group.
#include "paisoar/comm/communicator.h"

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "src/comm/group_state.h"
#include "src/comm/store_impl.h"

namespace paisoar::comm {
namespace detail {

C10dGroup& adopted_backend_for(GroupState& state, bool cuda) {
  C10dGroupPtr& backend = cuda ? state.nccl : state.cpu;
  if (backend) return *backend;
  if (!state.cpu && !state.nccl) {
    throw CommError(state.describe("collective") + ": the torch.distributed process group was released "
                        "(the interpreter is exiting); no collective can run on it any more",
                    CommError::Cause::InvalidArgument);
  }
  const char* device = cuda ? "CUDA" : "the CPU";
  const char* wanted = cuda ? "'nccl' (or 'cpu:gloo,cuda:nccl')" : "'gloo' (or 'cpu:gloo,cuda:nccl')";
  throw CommError(state.describe("collective") + ": the tensors are on " + device +
                      ", but the torch.distributed process group has only a '" +
                      state.adopted_from + "' backend, which does not serve them. Call "
                      "torch.distributed.init_process_group(backend=" + wanted +
                      "), or move the model to the device its backend serves",
                  CommError::Cause::InvalidArgument);
}

}  // namespace detail

std::shared_ptr<Communicator> Communicator::over_process_group(
    const c10::intrusive_ptr<::c10d::ProcessGroup>& group, const CommOptions& options) {
  TORCH_CHECK_VALUE(group, "Communicator::over_process_group: the process group is None");
  auto impl = std::make_shared<detail::StoreImpl>();
  impl->store = group->getStore();
  TORCH_CHECK_VALUE(impl->store, "Communicator::over_process_group: the process group has no store");
  auto state = std::make_unique<detail::GroupState>(Store::over(impl).with_prefix("paisoar"));
  state->rank = group->getRank();
  state->size = group->getSize();
  state->name = group->getGroupDesc().empty() ? "torch" : group->getGroupDesc();
  for (int r = 0; r < state->size; ++r) state->global_ranks.push_back(r);
  state->options = options;
  // Only what the group has: a GPU group without Gloo serves no CPU tensor.
  // The device types are a CUDA build's; a CPU build's group has only the CPU.
  if (group->hasBackendForDeviceType(c10::DeviceType::CPU)) {
    state->cpu = group->getBackend(c10::DeviceType::CPU);
  }
  if (group->hasBackendForDeviceType(c10::DeviceType::CUDA)) {
    state->nccl = group->getBackend(c10::DeviceType::CUDA);
  }
  TORCH_CHECK_VALUE(state->cpu || state->nccl, "Communicator::over_process_group: the group ('",
                    group->getBackendName(), "') has no backend for the CPU or CUDA");
  if (state->cpu && state->nccl && state->cpu != state->nccl) {
    state->adopted_from = state->cpu->getBackendName() + "+" + state->nccl->getBackendName();
  } else {
    state->adopted_from = (state->cpu ? state->cpu : state->nccl)->getBackendName();
  }
  // One backend serving both (Gloo handles CUDA tensors by staging through the
  // host) is not taken for the device it was not chosen for: the user asked
  // for Gloo on CPU tensors; CUDA tensors get the NCCL error above.
  if (state->cpu && state->cpu == state->nccl) {
    if (state->cpu->getBackendName() == "nccl") state->cpu.reset();
    else state->nccl.reset();
  }
  return std::shared_ptr<Communicator>(new Communicator(std::move(state)));
}

void Communicator::release_process_group() {
  if (state_->adopted_from.empty()) return;
  state_->in_flight.clear();
  state_->cpu.reset();
  state_->nccl.reset();
}

}  // namespace paisoar::comm
