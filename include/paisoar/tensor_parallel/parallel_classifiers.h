// The reference classifiers split across a tensor-parallel group with the
// plain models' parameter names, so a checkpoint moves between the two by
// joining or cutting the split tensors: ParallelMlpClassifier (models::Mlp's
// hidden layers in Megatron pairs, the first column-parallel, the second
// row-parallel; the head replicated) and ParallelFashionCnn (the convolutions
// replicated, fc1 column-parallel, fc2 row-parallel). Built from the plain
// model (its seeded weights cut into this rank's shards), they compute what
// it computes: the same layers (LayerSequence) and forward.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <utility>
#include <vector>

#include "paisoar/models/fashion_cnn.h"
#include "paisoar/models/layer_sequence.h"
#include "paisoar/models/mlp.h"
#include "paisoar/tensor_parallel/column_parallel_linear.h"
#include "paisoar/tensor_parallel/row_parallel_linear.h"

namespace paisoar::tensor_parallel {

// Layers: models::Mlp's (hidden.0 .. hidden.K-1, head). Throws
// c10::ValueError naming model.hidden when it has an odd number of widths (or
// none), and c10::Error naming the sizes when the group does not divide them.
class ParallelMlpClassifierImpl : public torch::nn::Module, public models::Layered {
 public:
  ParallelMlpClassifierImpl(const models::MlpImpl& full, Group group);
  torch::Tensor forward(torch::Tensor x);
  std::vector<models::Layer> layers() override;

  torch::nn::ModuleList hidden{nullptr};  // ColumnParallelLinear, RowParallelLinear, in pairs
  torch::nn::Linear head{nullptr};        // replicated

 private:
  models::MlpOptions options_;
  std::vector<std::pair<ColumnParallelLinear, RowParallelLinear>> pairs_;  // hidden's, as pairs
};
TORCH_MODULE(ParallelMlpClassifier);

// Layers: models::FashionCnn's (conv1, conv2, fc1, fc2).
class ParallelFashionCnnImpl : public torch::nn::Module, public models::Layered {
 public:
  ParallelFashionCnnImpl(const models::FashionCnnImpl& full, Group group);
  torch::Tensor forward(torch::Tensor x);
  std::vector<models::Layer> layers() override;

 private:
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};  // null unless the full model has them
  ColumnParallelLinear fc1{nullptr};
  RowParallelLinear fc2{nullptr};
};
TORCH_MODULE(ParallelFashionCnn);

}  // namespace paisoar::tensor_parallel
