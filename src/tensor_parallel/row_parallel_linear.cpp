// RowParallelLinear: the input-split Linear, its initialisation and loading
// from a full torch::nn::Linear.
#include "paisoar/tensor_parallel/row_parallel_linear.h"

#include <torch/nn/functional/linear.h>

#include <cmath>

#include "paisoar/tensor_parallel/sharding.h"

namespace paisoar::tensor_parallel {

RowParallelLinearImpl::RowParallelLinearImpl(int64_t in_features, int64_t out_features, Group group,
                                             RowParallelLinearOptions options)
    : in_features_(in_features), out_features_(out_features), group_(std::move(group)), options_(options) {
  TORCH_CHECK(group_ != nullptr, "RowParallelLinear: the tensor-parallel group is null");
  const int64_t local = divide_evenly(in_features, group_->size(), "in_features", "RowParallelLinear");
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight = register_parameter("weight", torch::empty({out_features, local}).uniform_(-bound, bound));
  if (options_.bias) bias = register_parameter("bias", torch::empty({out_features}).uniform_(-bound, bound));
}

torch::Tensor RowParallelLinearImpl::forward(const torch::Tensor& x) {
  torch::Tensor local = options_.input_is_parallel ? x : scatter_to_region(x, group_);
  TORCH_CHECK(local.size(-1) == weight.size(1), "RowParallelLinear: this rank's input has ", local.size(-1),
              " features but its shard takes ", weight.size(1), " (in_features ", in_features_, " / group size ",
              group_->size(), ")");
  torch::Tensor y = reduce_from_region(torch::nn::functional::linear(local, weight), group_);
  return bias.defined() ? y + bias : y;
}

std::vector<std::pair<std::string, ParameterSplit>> RowParallelLinearImpl::parameter_splits() const {
  return {{"weight", {1, 1}}};  // the bias is whole on every rank
}

void RowParallelLinearImpl::load_full(const torch::nn::Linear& full) {
  TORCH_CHECK(full->weight.size(0) == out_features_ && full->weight.size(1) == in_features_,
              "RowParallelLinear::load_full: the full layer is ", full->weight.size(1), " -> ",
              full->weight.size(0), " but this layer is ", in_features_, " -> ", out_features_);
  TORCH_CHECK(full->bias.defined() == options_.bias, "RowParallelLinear::load_full: the full layer ",
              full->bias.defined() ? "has" : "has no", " bias but this layer ", options_.bias ? "has" : "has none");
  torch::NoGradGuard no_grad;
  weight.copy_(shard_of(full->weight, 1, group_->rank(), group_->size()));
  if (options_.bias) bias.copy_(full->bias);
}

}  // namespace paisoar::tensor_parallel
