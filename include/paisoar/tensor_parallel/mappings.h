// The four communication steps of Megatron-style tensor parallelism as
// autograd functions over a tensor-parallel group: each is one collective in
// forward and its adjoint in backward, so gradients flow across the split.
#pragma once

#include <torch/types.h>

#include <memory>

#include "paisoar/comm/communicator.h"

namespace paisoar::tensor_parallel {

using Group = std::shared_ptr<comm::Communicator>;

// Contract for all four: every rank of `group` calls them in the same order
// with tensors of the same shape and dtype (they are collectives in forward
// and, when a gradient flows, in backward). `group` must outlive the autograd
// graph built from the result (the layers hold it). A group of size 1 makes
// each one the identity (scatter/gather keep the whole tensor).

// Identity forward, allreduce (sum) of the gradient backward: where a
// replicated activation enters parallel layers (Megatron's f).
torch::Tensor copy_to_region(const torch::Tensor& x, const Group& group);
// Allreduce (sum) forward, identity backward: where partial results of
// parallel layers are summed into a replicated activation (Megatron's g).
torch::Tensor reduce_from_region(const torch::Tensor& x, const Group& group);
// Allgather along the last dimension forward (ranks in order), this rank's
// slice of the gradient backward. Every rank's x has the same shape.
torch::Tensor gather_from_region(const torch::Tensor& x, const Group& group);
// This rank's slice of the last dimension forward, allgather of the gradient
// backward. Throws c10::Error when the last dimension is not divisible by
// the group size.
torch::Tensor scatter_to_region(const torch::Tensor& x, const Group& group);

}  // namespace paisoar::tensor_parallel
