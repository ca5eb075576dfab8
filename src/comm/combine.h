// combine_into: one rank's tensor folded into an accumulator under a c10d
// ReduceOp, for the backends that reduce ranks' tensors themselves (threads,
// shm); AVG sums here and the caller divides.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

namespace paisoar::comm::detail {

// acc = acc (op) t, elementwise. Throws c10::Error naming `backend` for an
// unsupported op (PREMUL_SUM).
void combine_into(at::Tensor& acc, const at::Tensor& t, const ::c10d::ReduceOp& op, const char* backend);

}  // namespace paisoar::comm::detail
