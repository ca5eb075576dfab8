// Reducing collectives: allreduce (with AVG and bf16, which Gloo 1.13 lacks),
// coalesced allreduce, and reduce-scatter built from one alltoall plus a local
// reduction (Gloo 1.13 has no reduce_scatter).
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <map>

#include "paisoar/comm/communicator.h"
#include "src/comm/staging.h"

namespace paisoar::comm {

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

// Issues the allreduce of `tensor` into `work`, with the steps that finish it.
void issue_allreduce(detail::GroupState& s, WorkImpl& work, const at::Tensor& tensor,
                     ReduceOp op) {
  // Gloo has no bf16: reduce in fp32 (exact for the inputs, one rounding at the end).
  bool widen = tensor.scalar_type() == at::kBFloat16;
  at::Tensor buf = widen ? tensor.to(at::kFloat) : detail::stage_output(tensor, work);
  // fp16 sums overflow at 65504: divide first, then sum (what DDP's fp16 hook does).
  bool divide_first = op == ReduceOp::Avg && tensor.scalar_type() == at::kHalf;
  if (divide_first) buf.div_(s.size);
  std::vector<at::Tensor> bufs{buf};
  ::c10d::AllreduceOptions opts;
  opts.reduceOp = to_c10d(op);
  opts.timeout = s.options.timeout;
  work.add(detail::submit(work.context(), s,
                          [&] { return s.backend_for(buf).allreduce(bufs, opts); }));
  if (op == ReduceOp::Avg && !divide_first) {
    int size = s.size;
    work.then([buf, size]() mutable { buf.div_(size); });
  }
  if (widen) work.then([tensor, buf]() mutable { tensor.copy_(buf); });
}

}  // namespace

Work Communicator::allreduce(torch::Tensor tensor, ReduceOp op) {
  auto& s = *state_;
  std::string ctx = detail::begin_collective(s, "allreduce", tensor, static_cast<int>(op));
  check_reducible(ctx, tensor, op);
  auto work = std::make_shared<WorkImpl>(ctx, s.options.timeout);
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
  auto work = std::make_shared<WorkImpl>(ctx, s.options.timeout);
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
    child->then([group, flat]() mutable {
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
  auto work = std::make_shared<WorkImpl>(ctx, s.options.timeout);
  at::Tensor in = input.contiguous();
  if (s.size == 1 || output.numel() == 0) {
    if (output.numel() > 0) output.copy_(in.view_as(output));
    return Work(work);
  }
  // Chunk r of every rank's input lands on rank r, in rank order: rows[j] = rank j's chunk.
  at::Tensor received = at::empty({s.size, output.numel()}, in.options());
  at::Tensor recv_bytes = detail::byte_view(received);
  at::Tensor send_bytes = detail::byte_view(in);
  std::vector<int64_t> equal_splits;
  ::c10d::AllToAllOptions opts;
  opts.timeout = s.options.timeout;
  work->add(detail::submit(ctx, s, [&] {
    return s.backend_for(in).alltoall_base(recv_bytes, send_bytes, equal_splits, equal_splits,
                                           opts);
  }));
  int size = s.size;
  work->then([received, output, op, size, in]() mutable {
    // Reduce low precision in fp32, like allreduce, then round once.
    at::Tensor rows = is_low_precision(received.scalar_type()) ? received.to(at::kFloat) : received;
    at::Tensor result;
    switch (op) {
      case ReduceOp::Sum: result = rows.sum(0, false, rows.scalar_type()); break;
      case ReduceOp::Avg: result = rows.sum(0).div_(size); break;
      case ReduceOp::Min: result = std::get<0>(rows.min(0)); break;
      case ReduceOp::Max: result = std::get<0>(rows.max(0)); break;
      case ReduceOp::Product: result = rows.prod(0, false, rows.scalar_type()); break;
    }
    output.copy_(result.view_as(output));
  });
  return Work(work);
}

}  // namespace paisoar::comm
