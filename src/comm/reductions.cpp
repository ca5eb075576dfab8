// Reducing collectives: allreduce (Gloo's own, with int16 widened, which Gloo
// rejects), coalesced allreduce, and reduce-scatter: NCCL's own on CUDA, on
// Gloo a pairwise exchange with each segment reduced as it arrives (1.5-4x
// faster than Gloo 2.x's, an allreduce followed by a copy of this rank's
// chunk: docs/BENCHMARKS.md, collectives).
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <map>

#include "paisoar/comm/communicator.h"
#include "src/comm/pairwise_exchange.h"
#include "src/comm/staging.h"

namespace paisoar::comm {

using detail::C10dGroup;
using detail::invalid;
using detail::WorkImpl;

namespace {

::c10d::ReduceOp to_c10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg: return ::c10d::ReduceOp::SUM;
    case ReduceOp::Min: return ::c10d::ReduceOp::MIN;
    case ReduceOp::Max: return ::c10d::ReduceOp::MAX;
    case ReduceOp::Product: return ::c10d::ReduceOp::PRODUCT;
  }
  return ::c10d::ReduceOp::SUM;
}

bool is_low_precision(at::ScalarType t) { return t == at::kHalf || t == at::kBFloat16; }

void check_reducible(const std::string& ctx, const at::Tensor& t, ReduceOp op) {
  if (t.scalar_type() == at::kBool || t.is_complex()) {
    invalid(ctx, std::string("cannot reduce a ") + c10::toString(t.scalar_type()) +
                     " tensor; convert it to a numeric dtype first");
  }
  if (op == ReduceOp::Avg && !at::isFloatingType(t.scalar_type())) {
    invalid(ctx, std::string("avg of a ") + c10::toString(t.scalar_type()) +
                     " tensor is not defined; use sum and divide, or a floating dtype");
  }
}

// out = op over `rows` (same shape as out), combined in rank order so the result
// does not depend on which rank computes it. Low precision is combined in fp32
// (like allreduce) and rounded once.
void combine_into(at::Tensor out, const std::vector<at::Tensor>& rows, ReduceOp op, int size) {
  const bool widen = is_low_precision(out.scalar_type());
  auto lift = [widen](const at::Tensor& t) { return widen ? t.to(at::kFloat) : t; };
  at::Tensor acc = widen ? at::empty(out.sizes(), out.options().dtype(at::kFloat)) : out;
  if (rows.size() == 1) acc.copy_(lift(rows[0]));
  for (size_t i = 1; i < rows.size(); ++i) {
    const at::Tensor a = i == 1 ? lift(rows[0]) : acc;  // out= may alias an input exactly
    const at::Tensor b = lift(rows[i]);
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg: at::add_out(acc, a, b); break;
      case ReduceOp::Min: at::minimum_out(acc, a, b); break;
      case ReduceOp::Max: at::maximum_out(acc, a, b); break;
      case ReduceOp::Product: at::mul_out(acc, a, b); break;
    }
  }
  if (op == ReduceOp::Avg) acc.div_(size);
  if (widen) out.copy_(acc);
}

// Issues the allreduce of `tensor` into `work`, with the steps that finish it.
// Gloo 2.x reduces bf16 and takes AVG itself (measured as fast as or 2-4x
// faster than widening bf16 to fp32 or dividing after a SUM: docs/BENCHMARKS.md,
// collectives); its bf16 ring sums round once per hop, like NCCL's.
void issue_allreduce(detail::GroupState& s, WorkImpl& work, const at::Tensor& tensor,
                     ReduceOp op) {
  // Gloo 2.14 rejects int16 ("Invalid scalar type"): reduce it in int32 (exact
  // for the inputs, one wrap at the end).
  const bool widen = tensor.scalar_type() == at::kShort;
  at::Tensor buf = widen ? tensor.to(at::kInt) : detail::stage_output(tensor, work);
  // fp16 sums overflow at 65504: divide first, then sum (what DDP's fp16 hook
  // does); Gloo's AVG divides after the sum.
  const bool divide_first = op == ReduceOp::Avg && tensor.scalar_type() == at::kHalf;
  if (divide_first) buf.div_(s.size);
  std::vector<at::Tensor> bufs{buf};
  ::c10d::AllreduceOptions opts;
  opts.reduceOp = op == ReduceOp::Avg && !divide_first ? ::c10d::ReduceOp(::c10d::ReduceOp::AVG) : to_c10d(op);
  opts.timeout = s.options.timeout;
  work.add(detail::submit(work.context(), s,
                          [&] { return s.backend_for(buf).allreduce(bufs, opts); }));
  if (widen) work.finally([tensor, buf]() mutable { tensor.copy_(buf); });
}

}  // namespace

Work Communicator::allreduce(torch::Tensor tensor, ReduceOp op) {
  auto& s = *state_;
  std::string ctx = detail::begin_collective(s, "allreduce", tensor, static_cast<int>(op));
  check_reducible(ctx, tensor, op);
  auto work = detail::collective_work(s, ctx, "allreduce", tensor);
  if (s.size > 1 && tensor.numel() > 0) issue_allreduce(s, *work, tensor, op);
  return Work(work);
}

Work Communicator::allreduce_coalesced(std::vector<torch::Tensor> tensors, ReduceOp op) {
  auto& s = *state_;
  int64_t total = 0;
  for (const auto& t : tensors) total += t.numel();
  at::Tensor shape_probe = at::empty({total}, at::TensorOptions().device(at::kMeta).dtype(
                                                  tensors.empty() ? at::kFloat
                                                                  : tensors[0].scalar_type()));
  std::string ctx = detail::begin_collective(s, "allreduce_coalesced", shape_probe,
                                             static_cast<int>(op) * 1000003 +
                                                 static_cast<int64_t>(tensors.size()));
  for (const auto& t : tensors) check_reducible(ctx, t, op);
  auto work = detail::collective_work(s, ctx, "allreduce_coalesced", shape_probe);
  if (s.size == 1 || total == 0) return Work(work);
  // One flat buffer per dtype, in order of first appearance (the same on every rank).
  std::vector<at::ScalarType> order;
  std::map<at::ScalarType, std::vector<at::Tensor>> by_dtype;
  for (const auto& t : tensors) {
    if (!by_dtype.count(t.scalar_type())) order.push_back(t.scalar_type());
    by_dtype[t.scalar_type()].push_back(t);
  }
  for (auto dtype : order) {
    auto& group = by_dtype[dtype];
    std::vector<at::Tensor> flat_parts;
    for (const auto& t : group) flat_parts.push_back(t.reshape({-1}));
    at::Tensor flat = at::cat(flat_parts);
    auto child = std::make_shared<WorkImpl>(ctx, s.options.timeout);
    issue_allreduce(s, *child, flat, op);
    child->finally([group, flat]() mutable {  // after the widened result is copied into flat
      int64_t offset = 0;
      for (auto& t : group) {
        t.copy_(flat.narrow(0, offset, t.numel()).view_as(t));
        offset += t.numel();
      }
    });
    work->add(child);
  }
  return Work(work);
}

Work Communicator::reduce_scatter(torch::Tensor output, torch::Tensor input, ReduceOp op) {
  auto& s = *state_;
  std::string ctx = detail::begin_collective(s, "reduce_scatter", input, static_cast<int>(op));
  check_reducible(ctx, input, op);
  if (input.numel() != output.numel() * s.size || input.scalar_type() != output.scalar_type()) {
    invalid(ctx, "input must have output's dtype and size() * output.numel() = " +
                     std::to_string(output.numel() * s.size) + " elements, it has " +
                     std::to_string(input.numel()));
  }
  auto work = detail::collective_work(s, ctx, "reduce_scatter", input);
  at::Tensor in = input.contiguous();
  if (s.size == 1 || output.numel() == 0) {
    if (output.numel() > 0) output.copy_(in.view_as(output));
    return Work(work);
  }
  if (C10dGroup& group = s.backend_for(in); s.has_flat_collectives(group)) {
    at::Tensor out = detail::stage_output(output, *work);
    ::c10d::ReduceScatterOptions opts;
    opts.reduceOp = op == ReduceOp::Avg ? ::c10d::ReduceOp(::c10d::ReduceOp::AVG) : to_c10d(op);
    opts.timeout = s.options.timeout;
    work->add(detail::submit(ctx, s, [&] { return group._reduce_scatter_base(out, in, opts); }));
    return Work(work);
  }
  // Gloo: chunk r of every rank's input goes to rank r; peers' chunks land in scratch rows
  // and are combined with ours segment by segment while later segments travel.
  const int64_t chunk = output.numel();
  const int64_t bytes = in.numel() * in.element_size();
  at::Tensor scratch = s.scratch->take(bytes, in.device());
  at::Tensor received = scratch.narrow(0, 0, bytes).view(in.scalar_type()).view({s.size, chunk});
  at::Tensor rows_in = in.view({s.size, chunk});
  at::Tensor out = detail::stage_output(output, *work).view({-1});
  const int rank = s.rank, size = s.size;
  detail::ExchangePlan plan;
  plan.chunk_numel = chunk;
  plan.send_chunk = [rows_in](int peer) { return rows_in[peer]; };
  plan.recv_chunk = [received](int peer) { return received[peer]; };
  // In place (output is this rank's chunk of input, as in ZeRO): our row is
  // overwritten while it is still being read, so combine from a copy of it.
  const bool in_place = out.is_alias_of(in);
  plan.on_segment = [=](int64_t begin, int64_t length) {
    std::vector<at::Tensor> rows;
    for (int r = 0; r < size; ++r) {
      at::Tensor row = (r == rank ? rows_in[r] : received[r]).narrow(0, begin, length);
      rows.push_back(r == rank && in_place ? row.clone() : row);
    }
    combine_into(out.narrow(0, begin, length), rows, op, size);
  };
  detail::pairwise_exchange(s, *work, plan, in.element_size(), in.device());
  work->then([pool = s.scratch, scratch] { pool->give_back(scratch); });
  return Work(work);
}

}  // namespace paisoar::comm
