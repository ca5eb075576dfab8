// copy/reduce/gather/scatter between replicated and split activations as
// torch::autograd::Functions; each backward is the forward's adjoint.
#include "paisoar/tensor_parallel/mappings.h"

#include <torch/csrc/autograd/custom_function.h>

#include <vector>

namespace paisoar::tensor_parallel {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The group travels through the context as a raw pointer (as in
// SyncBatchNorm); the layers that call these functions own it.
void save_group(AutogradContext* ctx, comm::Communicator* group) {
  ctx->saved_data["group"] = reinterpret_cast<int64_t>(group);
}
comm::Communicator* saved_group(AutogradContext* ctx) {
  return reinterpret_cast<comm::Communicator*>(ctx->saved_data["group"].toInt());
}

torch::Tensor allreduce_sum(const torch::Tensor& x, comm::Communicator& group) {
  torch::Tensor out = x.clone(at::MemoryFormat::Contiguous);
  if (group.size() > 1) group.allreduce(out, comm::ReduceOp::Sum).wait();
  return out;
}

torch::Tensor gather_last_dim(const torch::Tensor& x, comm::Communicator& group) {
  if (group.size() == 1) return x.clone();
  torch::Tensor flat = torch::empty({group.size() * x.numel()}, x.options());
  group.allgather_into(flat, x.contiguous()).wait();
  std::vector<int64_t> shape = {group.size()};
  for (int64_t s : x.sizes()) shape.push_back(s);
  return torch::cat(flat.view(shape).unbind(0), /*dim=*/-1);
}

torch::Tensor split_last_dim(const torch::Tensor& x, comm::Communicator& group) {
  const int64_t n = x.size(-1);
  TORCH_CHECK(n % group.size() == 0, "scatter_to_region: the last dimension (", n,
              ") is not divisible by the tensor-parallel group size (", group.size(),
              "); pad it or choose a group size that divides it");
  const int64_t width = n / group.size();
  return x.narrow(-1, group.rank() * width, width).contiguous();
}

struct CopyToRegion : torch::autograd::Function<CopyToRegion> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, comm::Communicator* group) {
    save_group(ctx, group);
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {allreduce_sum(grads[0], *saved_group(ctx)), torch::Tensor()};
  }
};

struct ReduceFromRegion : torch::autograd::Function<ReduceFromRegion> {
  static torch::Tensor forward(AutogradContext*, torch::Tensor x, comm::Communicator* group) {
    return allreduce_sum(x, *group);
  }
  static variable_list backward(AutogradContext*, variable_list grads) {
    return {grads[0], torch::Tensor()};
  }
};

struct GatherFromRegion : torch::autograd::Function<GatherFromRegion> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, comm::Communicator* group) {
    save_group(ctx, group);
    return gather_last_dim(x, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {split_last_dim(grads[0], *saved_group(ctx)), torch::Tensor()};
  }
};

struct ScatterToRegion : torch::autograd::Function<ScatterToRegion> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, comm::Communicator* group) {
    save_group(ctx, group);
    return split_last_dim(x, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {gather_last_dim(grads[0], *saved_group(ctx)), torch::Tensor()};
  }
};

comm::Communicator* checked(const Group& group, const char* op) {
  TORCH_CHECK(group != nullptr, op, ": the tensor-parallel group is null; pass the Communicator "
              "of the ranks that share the layer (e.g. DeviceMesh::group(\"tensor\"))");
  return group.get();
}

}  // namespace

torch::Tensor copy_to_region(const torch::Tensor& x, const Group& group) {
  return CopyToRegion::apply(x, checked(group, "copy_to_region"));
}

torch::Tensor reduce_from_region(const torch::Tensor& x, const Group& group) {
  return ReduceFromRegion::apply(x, checked(group, "reduce_from_region"));
}

torch::Tensor gather_from_region(const torch::Tensor& x, const Group& group) {
  return GatherFromRegion::apply(x, checked(group, "gather_from_region"));
}

torch::Tensor scatter_to_region(const torch::Tensor& x, const Group& group) {
  return ScatterToRegion::apply(x, checked(group, "scatter_to_region"));
}

}  // namespace paisoar::tensor_parallel
