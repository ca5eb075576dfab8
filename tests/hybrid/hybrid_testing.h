// Test support for hybrid parallelism: a small model of tensor-parallel
// blocks that every layout (data x pipeline x tensor) can split, the same
// model unsplit for the single-process reference, and the shard of a
// reference gradient that a tensor rank holds.
#pragma once

#include <torch/torch.h>

#include <string>

#include "paisoar/tensor_parallel/column_parallel_linear.h"
#include "paisoar/tensor_parallel/row_parallel_linear.h"
#include "paisoar/tensor_parallel/sharding.h"

namespace paisoar::testing {

// A Sequential usable as one layer of another (plain forward(Tensor)).
struct HybridBlockImpl : torch::nn::SequentialImpl {
  using SequentialImpl::SequentialImpl;
  torch::Tensor forward(torch::Tensor x) { return SequentialImpl::forward(x); }
};
TORCH_MODULE(HybridBlock);

// Layers: 0 = Block(Linear 8->16, Tanh, Linear 16->16), 1 = Tanh,
// 2 = Block(Linear 16->24, ReLU, Linear 24->12), 3 = Linear 12->4.
inline torch::nn::Sequential make_hybrid_reference() {
  namespace nn = torch::nn;
  return nn::Sequential(HybridBlock(nn::Linear(8, 16), nn::Tanh(), nn::Linear(16, 16)), nn::Tanh(),
                        HybridBlock(nn::Linear(16, 24), nn::ReLU(), nn::Linear(24, 12)), nn::Linear(12, 4));
}

// The same model with each block's pair split Megatron-style over `group`
// (column-parallel then row-parallel), weights loaded from `full`; the
// parameter names stay the reference's.
inline torch::nn::Sequential make_hybrid_split(const torch::nn::Sequential& full,
                                               const std::shared_ptr<comm::Communicator>& group) {
  namespace nn = torch::nn;
  namespace tp = tensor_parallel;
  tp::ColumnParallelLinearOptions column;
  column.gather_output = false;
  tp::RowParallelLinearOptions row;
  row.input_is_parallel = true;
  const auto linear = [&](int layer, int index) {
    return nn::Linear(full->ptr<HybridBlockImpl>(layer)->ptr<nn::LinearImpl>(index));
  };
  nn::Sequential split;
  for (int layer : {0, 2}) {
    const auto a = linear(layer, 0), b = linear(layer, 2);
    tp::ColumnParallelLinear first(a->options.in_features(), a->options.out_features(), group, column);
    tp::RowParallelLinear second(b->options.in_features(), b->options.out_features(), group, row);
    first->load_full(a);
    second->load_full(b);
    auto block = HybridBlock(first, layer == 0 ? nn::AnyModule(nn::Tanh()) : nn::AnyModule(nn::ReLU()), second);
    split->push_back(std::to_string(layer), block);
    if (layer == 0) split->push_back("1", nn::Tanh());
  }
  nn::Linear head(12, 4);
  head->weight.data().copy_(full->ptr<nn::LinearImpl>(3)->weight);
  head->bias.data().copy_(full->ptr<nn::LinearImpl>(3)->bias);
  split->push_back("3", head);
  return split;
}

// The part of the reference gradient `name` that tensor rank `rank` of
// `size` holds: column-parallel weights and biases by rows, row-parallel
// weights by columns, everything else whole.
inline torch::Tensor hybrid_shard(const std::string& name, const torch::Tensor& full, int rank, int size) {
  const bool column = name.rfind("0.0.", 0) == 0 || name.rfind("2.0.", 0) == 0;
  const bool row_weight = name == "0.2.weight" || name == "2.2.weight";
  if (column) return tensor_parallel::shard_of(full, 0, rank, size);
  if (row_weight) return tensor_parallel::shard_of(full, 1, rank, size);
  return full;
}

}  // namespace paisoar::testing
