// Communicator::over_process_group: paisoar's own group over the ranks and the
// store of a group torch.distributed created, so that Python's
// DistributedDataParallel and GradScaler average over the user's group with
// paisoar's transports (shared memory on one host, Gloo across hosts, NCCL for
// CUDA tensors) instead of driving torch's backends from C++.
#include "paisoar/comm/communicator.h"

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "src/comm/group_state.h"
#include "src/comm/store_impl.h"

namespace paisoar::comm {

std::shared_ptr<Communicator> Communicator::over_process_group(
    const c10::intrusive_ptr<::c10d::ProcessGroup>& group, const std::vector<int>& global_ranks,
    const CommOptions& options) {
  TORCH_CHECK_VALUE(group, "Communicator::over_process_group: the process group is None");
  auto impl = std::make_shared<detail::StoreImpl>();
  impl->store = group->getStore();
  TORCH_CHECK_VALUE(impl->store, "Communicator::over_process_group: the process group has no store");
  TORCH_CHECK_VALUE(global_ranks.empty() || global_ranks.size() == static_cast<size_t>(group->getSize()),
                    "Communicator::over_process_group: ", global_ranks.size(),
                    " global ranks for a group of size ", group->getSize());
  // Gloo binds where the route to the store's host leaves this machine, as
  // for paisoar's own TCP store; another store (a file) binds to loopback.
  auto base = impl->store;
  if (auto* prefixed = dynamic_cast<::c10d::PrefixStore*>(base.get())) {
    base = prefixed->getUnderlyingNonPrefixStore();
  }
  if (auto* tcp = dynamic_cast<::c10d::TCPStore*>(base.get())) {
    impl->host = tcp->getHost();
    impl->port = tcp->getPort();
  }
  auto comm = create(Store::over(impl).with_prefix("paisoar"), group->getRank(), group->getSize(), options);
  auto& state = comm->state();
  state.name = "torch:" + (group->getGroupDesc().empty() ? group->getGroupName() : group->getGroupDesc());
  if (!global_ranks.empty()) state.global_ranks = global_ranks;
  return comm;
}

}  // namespace paisoar::comm
