// Pairwise exchange: every rank sends one chunk to each peer and receives one
// from each, as many segmented point-to-point messages in flight at once. On
// Gloo this moves data 2-3x faster than its alltoall or allgather for large
// tensors, and lets the receiver work on segment k while k+1 is in flight.
#pragma once

#include <ATen/ATen.h>

#include <functional>

#include "src/comm/group_state.h"
#include "src/comm/work_impl.h"

namespace paisoar::comm::detail {

// Tags at and above this are paisoar's own; user send/recv tags stay below.
constexpr int kInternalTagBase = 1 << 30;

struct ExchangePlan {
  // The flat contiguous tensor sent to / received from `peer` (never called for self).
  std::function<at::Tensor(int peer)> send_chunk;
  std::function<at::Tensor(int peer)> recv_chunk;
  int64_t chunk_numel = 0;  // every chunk has this many elements
  // Called once per segment, in order, after that segment arrived from every
  // peer: [begin, begin + length) in elements of a chunk.
  std::function<void(int64_t begin, int64_t length)> on_segment;
};

// REQUIRES: `device`'s backend is Gloo. NCCL has native reduce-scatter and
// allgather, and would need the calls batched (start/endCoalescing).
// Posts all messages now, in segments of options.segment_bytes, and adds to
// `work` the steps that wait for them, calling on_segment as each completes.
void pairwise_exchange(GroupState& state, WorkImpl& work, const ExchangePlan& plan,
                       size_t element_size, c10::Device device);

}  // namespace paisoar::comm::detail
