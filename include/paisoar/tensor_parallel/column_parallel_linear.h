// ColumnParallelLinear: a Linear whose output features are split across the
// ranks of a tensor-parallel group (Megatron-LM's layer of the same name).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

#include "paisoar/tensor_parallel/mappings.h"
#include "paisoar/tensor_parallel/sharding.h"

namespace paisoar::tensor_parallel {

struct ColumnParallelLinearOptions {
  bool bias = true;
  // true: the output is gathered to the full out_features on every rank.
  // false: each rank keeps its out_features / size columns (feed them to a
  // RowParallelLinear with input_is_parallel).
  bool gather_output = true;
  // The output is this many equal blocks each split across ranks (3 for a
  // fused q, k, v projection, so every rank gets whole heads of each).
  // With gather_output the gathered columns are in rank order, not the full
  // layer's order, unless fused_parts is 1.
  int64_t fused_parts = 1;
};

// y = x A^T + b with A = [A_0; ...; A_{size-1}] split by rows: rank r holds
// A_r [out_features / size, in_features] and b_r. Forward: copy_to_region,
// the local matmul, gather_from_region when gather_output. The input is
// replicated (the same on every rank); its gradient is the full one.
// Throws c10::Error naming the sizes when size does not divide out_features
// (per fused part).
class ColumnParallelLinearImpl : public torch::nn::Module, public SplitLayer {
 public:
  // Initialises the shard as torch::nn::Linear(in, out) would the full layer
  // (uniform in +-1/sqrt(in_features)); load_full sets it from a full layer.
  ColumnParallelLinearImpl(int64_t in_features, int64_t out_features, Group group,
                           ColumnParallelLinearOptions options = {});
  torch::Tensor forward(const torch::Tensor& x);

  // Copies this rank's shard of `full` (no autograd). Throws c10::Error when
  // its shape or bias does not match this layer's.
  void load_full(const torch::nn::Linear& full);

  std::vector<std::pair<std::string, ParameterSplit>> parameter_splits() const override;
  const Group& group() const { return group_; }
  const ColumnParallelLinearOptions& options() const { return options_; }

  torch::Tensor weight;  // [out_features / size, in_features]
  torch::Tensor bias;    // [out_features / size], undefined without bias

 private:
  int64_t in_features_, out_features_;
  Group group_;
  ColumnParallelLinearOptions options_;
};
TORCH_MODULE(ColumnParallelLinear);

}  // namespace paisoar::tensor_parallel
