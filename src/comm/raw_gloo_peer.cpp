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
  TORCH_CHECK_VALUE(s.gloo_device != nullptr, "RawGlooPeer: the communicator's backend is 'threads'; "
                    "the Gloo peer needs a Gloo group (backend auto or gloo)");
  impl_->group = detail::make_gloo_group(s.store.with_prefix("raw_gloo").impl()->store, s.rank,
                                         s.size, s.options.timeout, s.gloo_device);
}

RawGlooPeer::~RawGlooPeer() = default;

void RawGlooPeer::allreduce(at::Tensor tensor, bool average) {
  std::vector<at::Tensor> tensors{tensor};
  ::c10d::AllreduceOptions opts;
  opts.reduceOp = average ? ::c10d::ReduceOp::AVG : ::c10d::ReduceOp::SUM;
  impl_->group->allreduce(tensors, opts)->wait();
}

void RawGlooPeer::allgather(std::vector<at::Tensor> outputs, at::Tensor input) {
  std::vector<std::vector<at::Tensor>> outs{std::move(outputs)};
  std::vector<at::Tensor> ins{input};
  impl_->group->allgather(outs, ins)->wait();
}

}  // namespace paisoar::comm

namespace paisoar::comm {

void RawGlooPeer::allgather_into(at::Tensor output, at::Tensor input) {
  impl_->group->_allgather_base(output, input)->wait();
}

void RawGlooPeer::reduce_scatter(at::Tensor output, at::Tensor input) {
  impl_->group->_reduce_scatter_base(output, input)->wait();
}

void RawGlooPeer::broadcast(at::Tensor tensor, int root) {
  std::vector<at::Tensor> tensors{tensor};
  ::c10d::BroadcastOptions opts;
  opts.rootRank = root;
  impl_->group->broadcast(tensors, opts)->wait();
}

}  // namespace paisoar::comm
