// Which of a model's parameters a tensor-parallel group holds as identical
// copies (everything no parallel layer splits: a RowParallelLinear's bias,
// LayerNorms, plain layers), so a global gradient norm counts them once.
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <vector>

namespace paisoar::hybrid {

// The parameters of `module` (recursively) that no tensor_parallel::SplitLayer
// splits (ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding), in
// module->parameters() order.
std::vector<torch::Tensor> tensor_replicated_parameters(const torch::nn::Module& module);

}  // namespace paisoar::hybrid
