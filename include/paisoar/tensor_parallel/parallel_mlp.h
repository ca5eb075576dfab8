// ParallelMlp: the GPT block's feed-forward part split across a
// tensor-parallel group, c_fc column-parallel and c_proj row-parallel, so a
// forward costs one allreduce (and one in backward).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "paisoar/models/gpt.h"
#include "paisoar/tensor_parallel/column_parallel_linear.h"
#include "paisoar/tensor_parallel/row_parallel_linear.h"

namespace paisoar::tensor_parallel {

// Computes what models::GptMlp computes (B x T x C -> B x T x C, replicated
// in and out): rank r holds 4C/size of the hidden units. Throws c10::Error
// naming the sizes when size does not divide 4 * n_embd.
// Dropout (options.dropout > 0) acts on the replicated output: seed every
// rank of the group alike, or the replicas drift apart.
class ParallelMlpImpl : public torch::nn::Module {
 public:
  ParallelMlpImpl(const models::GptOptions& options, Group group);
  torch::Tensor forward(const torch::Tensor& x);

  // This rank's shards of a full GptMlp built with the same options.
  void load_full(const models::GptMlpImpl& full);

  ColumnParallelLinear c_fc{nullptr};
  RowParallelLinear c_proj{nullptr};

 private:
  double dropout_;
};
TORCH_MODULE(ParallelMlp);

}  // namespace paisoar::tensor_parallel
