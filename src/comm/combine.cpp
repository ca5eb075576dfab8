// combine_into: the ReduceOp switch of the threads backend (combine.h).
#include "src/comm/combine.h"

#include <c10/util/Exception.h>

namespace paisoar::comm::detail {

void combine_into(at::Tensor& acc, const at::Tensor& t, const ::c10d::ReduceOp& op, const char* backend) {
  switch (op.op_) {
    case ::c10d::ReduceOp::SUM: case ::c10d::ReduceOp::AVG: acc.add_(t); break;
    case ::c10d::ReduceOp::PRODUCT: acc.mul_(t); break;
    case ::c10d::ReduceOp::MIN: at::minimum_out(acc, acc, t); break;
    case ::c10d::ReduceOp::MAX: at::maximum_out(acc, acc, t); break;
    case ::c10d::ReduceOp::BAND: acc.bitwise_and_(t); break;
    case ::c10d::ReduceOp::BOR: acc.bitwise_or_(t); break;
    case ::c10d::ReduceOp::BXOR: acc.bitwise_xor_(t); break;
    default: TORCH_CHECK(false, backend, " backend: reduce op ", static_cast<int>(op.op_), " is not supported");
  }
}

}  // namespace paisoar::comm::detail
