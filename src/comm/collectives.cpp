// Data-movement collectives: broadcast, allgather (list and flat), barrier,
// send and recv. Tensors travel as bytes, so every dtype works on Gloo.
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "paisoar/comm/communicator.h"
#include "src/comm/pairwise_exchange.h"
#include "src/comm/staging.h"

namespace paisoar::comm {

using detail::byte_view;
using detail::invalid;
using detail::stage_output;
using detail::WorkImpl;

Work Communicator::broadcast(torch::Tensor tensor, int root) {
  auto& s = *state_;
  std::string ctx = detail::begin_collective(s, "broadcast", tensor, root);
  if (root < 0 || root >= s.size) invalid(ctx, "root " + std::to_string(root) + " is not a rank");
  auto work = detail::collective_work(s, ctx, "broadcast", tensor);
  if (s.size == 1 || tensor.numel() == 0) return Work(work);
  at::Tensor buf = stage_output(tensor, *work);
  std::vector<at::Tensor> bufs{byte_view(buf)};
  ::c10d::BroadcastOptions opts;
  opts.rootRank = root;
  opts.timeout = s.options.timeout;
  work->add(detail::submit(ctx, s, [&] { return s.backend_for(buf).broadcast(bufs, opts); }));
  return Work(work);
}

Work Communicator::allgather(std::vector<torch::Tensor> outputs, torch::Tensor input) {
  auto& s = *state_;
  std::string ctx = detail::begin_collective(s, "allgather", input, 0);
  if (static_cast<int>(outputs.size()) != s.size) {
    invalid(ctx, "got " + std::to_string(outputs.size()) + " output tensors, need one per rank (" +
                     std::to_string(s.size) + ")");
  }
  for (const auto& out : outputs) {
    if (out.numel() != input.numel() || out.scalar_type() != input.scalar_type()) {
      invalid(ctx, "every output must have the input's dtype and number of elements");
    }
  }
  auto work = detail::collective_work(s, ctx, "allgather", input);
  at::Tensor in = input.contiguous();
  if (s.size == 1 || input.numel() == 0) {
    if (s.size == 1) outputs[0].copy_(in.view_as(outputs[0]));
    return Work(work);
  }
  std::vector<std::vector<at::Tensor>> outs(1);
  for (auto& out : outputs) outs[0].push_back(byte_view(stage_output(out, *work)));
  std::vector<at::Tensor> ins{byte_view(in)};
  ::c10d::AllgatherOptions opts;
  opts.timeout = s.options.timeout;
  work->add(detail::submit(ctx, s, [&] { return s.backend_for(in).allgather(outs, ins, opts); }));
  return Work(work);
}

Work Communicator::allgather_into(torch::Tensor output, torch::Tensor input) {
  auto& s = *state_;
  std::string ctx = detail::begin_collective(s, "allgather_into", input, 0);
  if (output.numel() != input.numel() * s.size || output.scalar_type() != input.scalar_type()) {
    invalid(ctx, "output must have the input's dtype and size() * input.numel() = " +
                     std::to_string(input.numel() * s.size) + " elements, it has " +
                     std::to_string(output.numel()));
  }
  auto work = detail::collective_work(s, ctx, "allgather_into", input);
  at::Tensor in = input.contiguous();
  if (s.size == 1 || input.numel() == 0) {
    if (s.size == 1) output.copy_(in.view_as(output));
    return Work(work);
  }
  if (detail::C10dGroup& group = s.backend_for(in); s.has_flat_collectives(group)) {
    at::Tensor out = stage_output(output, *work).view({-1});
    at::Tensor flat = in.view({-1});
    ::c10d::AllgatherOptions opts;
    opts.timeout = s.options.timeout;
    work->add(detail::submit(ctx, s, [&] { return group._allgather_base(out, flat, opts); }));
    return Work(work);
  }
  // Gloo: every peer's input is received straight into its slot of the output
  // by a pairwise exchange, 1.1-4x faster than Gloo 2.x's _allgather_base
  // (docs/BENCHMARKS.md, collectives).
  at::Tensor slots = stage_output(output, *work).view({s.size, input.numel()});
  slots[s.rank].copy_(in.view({-1}));
  at::Tensor flat_in = in.view({-1});
  detail::ExchangePlan plan;
  plan.chunk_numel = input.numel();
  plan.send_chunk = [flat_in](int) { return flat_in; };
  plan.recv_chunk = [slots](int peer) { return slots[peer]; };
  detail::pairwise_exchange(s, *work, plan, in.element_size(), in.device());
  return Work(work);
}

Work Communicator::barrier() {
  auto& s = *state_;
  std::string ctx = detail::begin_collective(s, "barrier", at::Tensor(), 0);
  auto work = detail::collective_work(s, ctx, "barrier", at::Tensor());
  if (s.size == 1) return Work(work);
  ::c10d::BarrierOptions opts;
  opts.timeout = s.options.timeout;
  work->add(detail::submit(ctx, s, [&] { return s.cpu->barrier(opts); }));
  return Work(work);
}

namespace {

void check_peer(const detail::GroupState& s, const std::string& ctx, int peer, int tag) {
  if (tag < 0 || tag >= detail::kInternalTagBase) {
    invalid(ctx, "tag " + std::to_string(tag) + " must be in [0, 2^30); larger tags are paisoar's own");
  }
  if (peer < 0 || peer >= s.size || peer == s.rank) {
    invalid(ctx, "peer " + std::to_string(peer) + " must be another rank of this group (0.." +
                     std::to_string(s.size - 1) + ")");
  }
}

}  // namespace

Work Communicator::send(torch::Tensor tensor, int peer, int tag) {
  auto& s = *state_;
  // Point to point does not count as a collective: ranks issue different numbers
  // of sends and recvs (a pipeline's middle stage twice its ends'), and the tags
  // of pairwise exchanges (reduce_scatter, allgather_into) carry `issued`, which
  // must agree on every rank. Errors name the last collective's number.
  std::string ctx = s.describe("send to " + std::to_string(peer));
  check_peer(s, ctx, peer, tag);
  auto work = detail::transfer_work(s, ctx, "send", tensor, peer);
  at::Tensor buf = tensor.contiguous();
  std::vector<at::Tensor> bufs{byte_view(buf)};
  work->add(detail::submit(ctx, s, [&] { return s.backend_for(buf).send(bufs, peer, tag); }));
  return Work(work);
}

Work Communicator::recv(torch::Tensor tensor, int peer, int tag) {
  auto& s = *state_;
  std::string ctx = s.describe("recv from " + std::to_string(peer));  // not counted: see send
  check_peer(s, ctx, peer, tag);
  auto work = detail::transfer_work(s, ctx, "recv", tensor, peer);
  at::Tensor buf = stage_output(tensor, *work);
  std::vector<at::Tensor> bufs{byte_view(buf)};
  work->add(detail::submit(ctx, s, [&] { return s.backend_for(buf).recv(bufs, peer, tag); }));
  return Work(work);
}

}  // namespace paisoar::comm
