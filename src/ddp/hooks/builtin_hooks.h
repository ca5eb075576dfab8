// The built-in CommHooks, one file each; make_comm_hook picks among them.
#pragma once

#include <memory>

#include "paisoar/ddp/comm_hook.h"

namespace paisoar::ddp::detail {

// Averages the bucket as it is.
std::unique_ptr<CommHook> make_allreduce_hook(std::shared_ptr<comm::Communicator> comm);
// Casts to `dtype`, averages, casts back.
std::unique_ptr<CommHook> make_cast_hook(std::shared_ptr<comm::Communicator> comm,
                                         c10::ScalarType dtype);
// Reduce-scatter in the node, allreduce across nodes, allgather in the node.
// Ranks are laid out node-major (rank = node * ranks_per_node + local rank).
std::unique_ptr<CommHook> make_hierarchical_hook(std::shared_ptr<comm::Communicator> comm,
                                                 int ranks_per_node);
std::unique_ptr<CommHook> make_int8_hook(std::shared_ptr<comm::Communicator> comm,
                                         const CompressionOptions& options);
std::unique_ptr<CommHook> make_powersgd_hook(std::shared_ptr<comm::Communicator> comm,
                                             const CompressionOptions& options);

}  // namespace paisoar::ddp::detail
