// Vocab-parallel cross-entropy (Megatron-LM's): the loss of logits whose
// vocabulary is split across a tensor-parallel group, computed without ever
// gathering the full logits [rows, V] on any rank.
#pragma once

#include <ATen/core/Reduction.h>
#include <torch/types.h>

#include <cstdint>

#include "paisoar/tensor_parallel/mappings.h"

namespace paisoar::tensor_parallel {

struct VocabParallelCrossEntropyOptions {
  // Mean (default, as torch): the sum over the rows whose target is not
  // ignore_index, divided by their count (NaN when every row is ignored, as
  // torch). Sum: their sum. None: the loss of every row, shaped like the
  // targets, 0 where the target is ignore_index.
  at::Reduction::Reduction reduction = at::Reduction::Mean;
  // Rows whose target equals this contribute no loss and no gradient (torch's
  // default, -100). It may be a vocabulary id too.
  int64_t ignore_index = -100;
};

// torch::nn::functional::cross_entropy(full_logits.reshape({-1, V}),
// targets.reshape({-1})) (reshaped back to the targets' shape for reduction
// None), where full_logits is every rank's logits_shard concatenated along the
// last dimension in rank order: rank r holds the vocabulary columns
// [r V/size, (r+1) V/size) of V = size * logits_shard.size(-1) (the layout of
// VocabParallelEmbedding and ParallelGpt::forward_logits_shard). Note the
// vocabulary is the LAST dimension ([B, T, V], as Megatron), not dimension 1
// as in torch's cross_entropy on [N, C, d1, ...].
//
// logits_shard: [..., V/size] floating point; targets: int64 [...] (the
// logits' leading dimensions), full-vocabulary ids in [0, V) or ignore_index.
// Computed in fp32 for fp16/bf16 logits (fp64 for fp64); the loss is returned
// in that precision, the logits' gradient in the logits' dtype.
//
// Forward is two allreduces over `group`: the max of each row ([rows]), then
// the sum of exp and the target's logit (only the rank that owns the target
// contributes) together ([2, rows]). Backward is local: softmax_shard -
// onehot_shard, scaled by the incoming gradient per row. The loss is the same
// on every rank.
//
// Contract: collective, as the mappings: every rank of `group` calls it in
// the same order with logits shards of the same shape and the SAME targets.
// Errors are c10::Errors thrown before any collective, so with the same
// targets every rank throws the same one: targets not int64, shapes that do
// not match, a target outside [0, V) that is not ignore_index (naming the id
// and V), non-floating logits, a null group.
torch::Tensor vocab_parallel_cross_entropy(const torch::Tensor& logits_shard, const torch::Tensor& targets,
                                           const Group& group,
                                           const VocabParallelCrossEntropyOptions& options = {});

}  // namespace paisoar::tensor_parallel
