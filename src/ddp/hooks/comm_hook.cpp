// make_comm_hook and the names of the compression choices.
#include "paisoar/ddp/comm_hook.h"

#include <c10/util/Exception.h>

#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>

#include "paisoar/comm/communicator.h"
#include "paisoar/comm/env.h"
#include "src/ddp/hooks/builtin_hooks.h"

namespace paisoar::ddp {

Compression parse_compression(const std::string& text) {
  if (text == "none") return Compression::None;
  if (text == "fp16") return Compression::FP16;
  if (text == "bf16") return Compression::BF16;
  if (text == "int8") return Compression::Int8;
  if (text == "powersgd") return Compression::PowerSGD;
  C10_THROW_ERROR(ValueError, "unknown gradient compression '" + text +
                              "': use none, fp16, bf16, int8 or powersgd");
}

const char* to_string(Compression compression) {
  switch (compression) {
    case Compression::None: return "none";
    case Compression::FP16: return "fp16";
    case Compression::BF16: return "bf16";
    case Compression::Int8: return "int8";
    case Compression::PowerSGD: return "powersgd";
  }
  return "?";
}

std::unique_ptr<CommHook> make_comm_hook(const DdpOptions& options,
                                         std::shared_ptr<comm::Communicator> comm) {
  if (options.hierarchical && options.compression.type == Compression::None && comm->size() > 1) {
    const int per_node = std::max(1, options.ranks_per_node);
    // Every rank must take the same branch (the hierarchical hook forms groups,
    // a collective): agree on the smallest and largest ranks-per-node.
    torch::Tensor range = torch::tensor({per_node, -per_node}, torch::kInt32);
    comm->allreduce(range, comm::ReduceOp::Max).wait();
    const int most = range[0].item<int>(), least = -range[1].item<int>();
    if (most == least && most > 1 && most < comm->size() && comm->size() % most == 0) {
      return detail::make_hierarchical_hook(std::move(comm), most);
    }
  }
  return make_comm_hook(options.compression, std::move(comm));
}

std::unique_ptr<CommHook> make_comm_hook(const CompressionOptions& options,
                                         std::shared_ptr<comm::Communicator> comm) {
  switch (options.type) {
    case Compression::None: return detail::make_allreduce_hook(std::move(comm));
    case Compression::FP16: return detail::make_cast_hook(std::move(comm), torch::kHalf);
    case Compression::BF16: return detail::make_cast_hook(std::move(comm), torch::kBFloat16);
    case Compression::Int8: return detail::make_int8_hook(std::move(comm), options);
    case Compression::PowerSGD: return detail::make_powersgd_hook(std::move(comm), options);
  }
  C10_THROW_ERROR(ValueError, "make_comm_hook: unknown compression");
}

}  // namespace paisoar::ddp
