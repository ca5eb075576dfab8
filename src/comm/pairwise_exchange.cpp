// pairwise_exchange: segmented, fully posted send/recv between all pairs.
#include "src/comm/pairwise_exchange.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <algorithm>

#include "src/comm/staging.h"

namespace paisoar::comm::detail {

void pairwise_exchange(GroupState& state, WorkImpl& work, const ExchangePlan& plan,
                       size_t element_size, c10::Device device) {
  const int64_t per_segment =
      std::max<int64_t>(1, state.options.segment_bytes / static_cast<int64_t>(element_size));
  const int64_t segments = (plan.chunk_numel + per_segment - 1) / per_segment;
  at::Tensor probe = at::empty({0}, at::TensorOptions().device(device));
  C10dGroup& backend = state.backend_for(probe);
  auto sends = std::make_shared<WorkImpl>(work.context(), state.options.timeout);
  std::vector<std::shared_ptr<WorkImpl>> arrivals;
  // Tags carry the collective's number, so a message of an abandoned collective
  // can never be taken for one of the next.
  const int tag_base = kInternalTagBase + static_cast<int>((state.issued % (1 << 14)) << 16);
  for (int64_t seg = 0; seg < segments; ++seg) {
    const int64_t begin = seg * per_segment;
    const int64_t length = std::min(per_segment, plan.chunk_numel - begin);
    const int tag = tag_base + static_cast<int>(seg % (1 << 16));
    auto arrival = std::make_shared<WorkImpl>(work.context(), state.options.timeout);
    // Post to peers in rotating order (rank+1, rank+2, ...) so no rank is everyone's first.
    for (int step = 1; step < state.size; ++step) {
      const int to = (state.rank + step) % state.size;
      const int from = (state.rank - step + state.size) % state.size;
      std::vector<at::Tensor> out{byte_view(plan.send_chunk(to).narrow(0, begin, length))};
      std::vector<at::Tensor> in{byte_view(plan.recv_chunk(from).narrow(0, begin, length))};
      sends->add(submit(work.context(), state, [&] { return backend.send(out, to, tag); }));
      arrival->add(submit(work.context(), state, [&] { return backend.recv(in, from, tag); }));
    }
    if (plan.on_segment) {
      auto on_segment = plan.on_segment;
      arrival->then([on_segment, begin, length] { on_segment(begin, length); });
    }
    arrivals.push_back(arrival);
  }
  for (auto& arrival : arrivals) work.add(arrival);
  work.add(sends);
  // A dropped Work or one whose wait() threw must not cancel messages its peers
  // still expect: the group keeps them alive until they complete.
  state.keep_until_complete(arrivals);
  state.keep_until_complete({sends});
}

}  // namespace paisoar::comm::detail
