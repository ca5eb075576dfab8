// ColumnParallelLinear: the output-split Linear, its initialisation and
// loading from a full torch::nn::Linear.
#include "paisoar/tensor_parallel/column_parallel_linear.h"

#include <torch/nn/functional/linear.h>

#include <cmath>

#include "paisoar/tensor_parallel/sharding.h"

namespace paisoar::tensor_parallel {

ColumnParallelLinearImpl::ColumnParallelLinearImpl(int64_t in_features, int64_t out_features, Group group,
                                                   ColumnParallelLinearOptions options)
    : in_features_(in_features), out_features_(out_features), group_(std::move(group)), options_(options) {
  TORCH_CHECK(group_ != nullptr, "ColumnParallelLinear: the tensor-parallel group is null");
  TORCH_CHECK(options_.fused_parts >= 1 && out_features % options_.fused_parts == 0,
              "ColumnParallelLinear: out_features (", out_features, ") is not ", options_.fused_parts,
              " equal fused parts");
  const int64_t part = divide_evenly(out_features / options_.fused_parts, group_->size(),
                                     options_.fused_parts == 1 ? "out_features" : "out_features per fused part",
                                     "ColumnParallelLinear");
  const int64_t local = part * options_.fused_parts;
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight = register_parameter("weight", torch::empty({local, in_features}).uniform_(-bound, bound));
  if (options_.bias) bias = register_parameter("bias", torch::empty({local}).uniform_(-bound, bound));
}

torch::Tensor ColumnParallelLinearImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = torch::nn::functional::linear(copy_to_region(x, group_), weight, bias);
  return options_.gather_output ? gather_from_region(y, group_) : y;
}

std::vector<std::pair<std::string, ParameterSplit>> ColumnParallelLinearImpl::parameter_splits() const {
  std::vector<std::pair<std::string, ParameterSplit>> splits = {{"weight", {0, options_.fused_parts}}};
  if (options_.bias) splits.push_back({"bias", {0, options_.fused_parts}});
  return splits;
}

void ColumnParallelLinearImpl::load_full(const torch::nn::Linear& full) {
  TORCH_CHECK(full->weight.size(0) == out_features_ && full->weight.size(1) == in_features_,
              "ColumnParallelLinear::load_full: the full layer is ", full->weight.size(1), " -> ",
              full->weight.size(0), " but this layer is ", in_features_, " -> ", out_features_);
  TORCH_CHECK(full->bias.defined() == options_.bias, "ColumnParallelLinear::load_full: the full layer ",
              full->bias.defined() ? "has" : "has no", " bias but this layer ", options_.bias ? "has" : "has none");
  torch::NoGradGuard no_grad;
  const int rank = group_->rank(), size = group_->size();
  weight.copy_(shard_of(full->weight, 0, rank, size, options_.fused_parts));
  if (options_.bias) bias.copy_(shard_of(full->bias, 0, rank, size, options_.fused_parts));
}

}  // namespace paisoar::tensor_parallel
