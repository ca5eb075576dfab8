// Names of the communication layer's enums, for messages and config files.
#include "paisoar/comm/types.h"

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
  }
  return "?";
}

Backend parse_backend(const std::string& name) {
  if (name == "auto") return Backend::Auto;
  if (name == "gloo") return Backend::Gloo;
  if (name == "nccl") return Backend::Nccl;
  throw std::invalid_argument("unknown communication backend '" + name +
                              "': use auto, gloo or nccl");
}

}  // namespace paisoar::comm
