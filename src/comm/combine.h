// combine_into: one rank's tensor folded into an accumulator under a c10d
// ReduceOp, for the threads backend, which reduces the ranks' tensors (of
// any device) itself; AVG sums here and the caller divides. The shm backend
// reduces raw CPU memory with reduce_rows (shm_reduce.h) instead.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

namespace paisoar::comm::detail {

// acc = acc (op) t, elementwise. Throws c10::Error naming `backend` for an
// unsupported op (PREMUL_SUM).
void combine_into(at::Tensor& acc, const at::Tensor& t, const ::c10d::ReduceOp& op, const char* backend);

}  // namespace paisoar::comm::detail
