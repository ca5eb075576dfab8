// Names of the communication layer's enums, for messages and config files.
#include "paisoar/comm/types.h"

#include <c10/util/Exception.h>

namespace paisoar::comm {

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Avg: return "avg";
    case ReduceOp::Min: return "min";
    case ReduceOp::Max: return "max";
    case ReduceOp::Product: return "product";
  }
  return "?";
}

const char* to_string(Backend backend) {
  switch (backend) {
    case Backend::Auto: return "auto";
    case Backend::Gloo: return "gloo";
    case Backend::Nccl: return "nccl";
    case Backend::Threads: return "threads";
    case Backend::Shm: return "shm";
  }
  return "?";
}

Backend backend_named(const std::string& name, const std::string& what) {
  for (Backend b : {Backend::Auto, Backend::Gloo, Backend::Nccl, Backend::Shm}) {
    if (name == to_string(b)) return b;
  }
  C10_THROW_ERROR(ValueError, what + "=" + name + " is not a backend: use auto, gloo, nccl or shm");
}

}  // namespace paisoar::comm
