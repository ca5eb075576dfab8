// RowParallelLinear: a Linear whose input features are split across the
// ranks of a tensor-parallel group (Megatron-LM's layer of the same name).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

#include "paisoar/tensor_parallel/mappings.h"
#include "paisoar/tensor_parallel/sharding.h"

namespace paisoar::tensor_parallel {

struct RowParallelLinearOptions {
  bool bias = true;
  // true: the input is already split along its last dimension (the output of
  // a ColumnParallelLinear without gather_output). false: the input is
  // replicated and each rank takes its slice (scatter_to_region).
  bool input_is_parallel = false;
};

// y = x A^T + b with A = [A_0, ..., A_{size-1}] split by columns: rank r holds
// A_r [out_features, in_features / size]. Forward: the local matmul, then
// reduce_from_region (allreduce), then the bias, which is whole on every rank
// and added once, after the sum. The output is replicated.
// Throws c10::Error naming the sizes when size does not divide in_features.
class RowParallelLinearImpl : public torch::nn::Module, public SplitLayer {
 public:
  // Initialises the shard as torch::nn::Linear(in, out) would the full layer
  // (uniform in +-1/sqrt(in_features)); load_full sets it from a full layer.
  RowParallelLinearImpl(int64_t in_features, int64_t out_features, Group group,
                        RowParallelLinearOptions options = {});
  torch::Tensor forward(const torch::Tensor& x);

  // Copies this rank's shard of `full` (no autograd). Throws c10::Error when
  // its shape or bias does not match this layer's.
  void load_full(const torch::nn::Linear& full);

  std::vector<std::pair<std::string, ParameterSplit>> parameter_splits() const override;
  const Group& group() const { return group_; }
  const RowParallelLinearOptions& options() const { return options_; }

  torch::Tensor weight;  // [out_features, in_features / size]
  torch::Tensor bias;    // [out_features], the same on every rank; undefined without bias

 private:
  int64_t in_features_, out_features_;
  Group group_;
  RowParallelLinearOptions options_;
};
TORCH_MODULE(RowParallelLinear);

}  // namespace paisoar::tensor_parallel
