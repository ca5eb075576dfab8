// NCCL process groups: GPU collectives, compiled only when PAISOAR_CUDA is on
// (against a CUDA LibTorch; needs -DUSE_C10D_NCCL).
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "src/comm/backend.h"

namespace paisoar::comm::detail {

C10dGroupPtr make_nccl_group(const C10dStorePtr& store, int rank, int size,
                             std::chrono::milliseconds timeout) {
  auto options = ::c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<::c10d::ProcessGroupNCCL>(store, rank, size, options);
}

}  // namespace paisoar::comm::detail
