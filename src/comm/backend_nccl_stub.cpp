// NCCL factory for CPU-only builds: explains how to get a build with NCCL.
#include <stdexcept>

#include <c10/util/Exception.h>

#include "src/comm/backend.h"

namespace paisoar::comm::detail {

C10dGroupPtr make_nccl_group(const C10dStorePtr&, int, int, std::chrono::milliseconds) {
  C10_THROW_ERROR(Error, 
      "the NCCL backend is not in this build of paisoar: configure with -DPAISOAR_CUDA=ON "
      "and CMAKE_PREFIX_PATH pointing at a CUDA LibTorch, or use backend 'gloo'");
}

}  // namespace paisoar::comm::detail
