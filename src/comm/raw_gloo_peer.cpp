// RawGlooPeer: c10d's ProcessGroupGloo used directly, as the benchmark peer.
#include "src/comm/raw_gloo_peer.h"

#include "src/comm/backend.h"
#include "src/comm/group_state.h"
#include "src/comm/store_impl.h"

namespace paisoar::comm {

struct RawGlooPeer::Impl {
  detail::C10dGroupPtr group;
};

RawGlooPeer::RawGlooPeer(Communicator& comm) : impl_(std::make_unique<Impl>()) {
  auto& s = comm.state();
  impl_->group = detail::make_gloo_group(s.store.with_prefix("raw_gloo").impl()->store, s.rank,
                                         s.size, s.options.timeout, s.gloo_device);
}

RawGlooPeer::~RawGlooPeer() = default;

void RawGlooPeer::allreduce(at::Tensor tensor) {
  std::vector<at::Tensor> tensors{tensor};
  impl_->group->allreduce(tensors)->wait();
}

void RawGlooPeer::allgather(std::vector<at::Tensor> outputs, at::Tensor input) {
  std::vector<std::vector<at::Tensor>> outs{std::move(outputs)};
  std::vector<at::Tensor> ins{input};
  impl_->group->allgather(outs, ins)->wait();
}

}  // namespace paisoar::comm
