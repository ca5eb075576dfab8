// Vocab-parallel cross-entropy: a row's log-sum-exp and target logit from
// two allreduces of per-row statistics, and a backward that needs no
// communication (softmax_shard - onehot_shard).
#include "paisoar/tensor_parallel/vocab_parallel_cross_entropy.h"

#include <torch/csrc/autograd/custom_function.h>

namespace paisoar::tensor_parallel {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr const char* kName = "vocab_parallel_cross_entropy";

// The per-row loss [rows] of logits [rows, V/size] (this rank's columns) and
// flat targets [rows]; ignored rows have loss 0 and get no gradient. As in
// mappings.cpp the group travels as a raw pointer: the caller owns it.
struct VocabParallelRowLoss : torch::autograd::Function<VocabParallelRowLoss> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logits, const torch::Tensor& targets,
                               comm::Communicator* group, int64_t ignore_index) {
    const auto compute = logits.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
    const torch::Tensor x = logits.to(compute);
    const int64_t width = x.size(1);
    const int64_t begin = group->rank() * width;
    const bool communicate = group->size() > 1 && x.size(0) > 0;  // the same on every rank

    torch::Tensor row_max = x.amax(1);
    if (communicate) group->allreduce(row_max, comm::ReduceOp::Max).wait();
    // One [rows, V/size] buffer beyond the input: shifted, then exp, then softmax in place.
    torch::Tensor softmax = x - row_max.unsqueeze(1);

    // Only the rank whose columns hold a row's target contributes its logit
    // (ignored rows are masked out of the loss and the gradient below).
    const torch::Tensor ignored = targets.eq(ignore_index);
    const torch::Tensor owned = targets.ge(begin).logical_and(targets.lt(begin + width));
    const torch::Tensor local = (targets - begin).masked_fill(owned.logical_not(), 0);
    const torch::Tensor target_part =
        softmax.gather(1, local.unsqueeze(1)).squeeze(1).masked_fill(owned.logical_not(), 0.0);
    softmax.exp_();
    torch::Tensor stats = torch::stack({softmax.sum(1), target_part});
    if (communicate) group->allreduce(stats, comm::ReduceOp::Sum).wait();
    const torch::Tensor sum_exp = stats[0], target_shifted = stats[1];

    softmax.div_(sum_exp.unsqueeze(1));
    ctx->save_for_backward({softmax, local, owned, ignored});
    ctx->saved_data["dtype"] = logits.scalar_type();
    return (sum_exp.log() - target_shifted).masked_fill_(ignored, 0.0);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &softmax = saved[0], &local = saved[1], &owned = saved[2], &ignored = saved[3];
    const torch::Tensor grad_rows = grads[0].to(softmax.scalar_type()).masked_fill(ignored, 0.0);
    torch::Tensor grad = softmax * grad_rows.unsqueeze(1);
    grad.scatter_add_(1, local.unsqueeze(1), (-grad_rows).masked_fill(owned.logical_not(), 0.0).unsqueeze(1));
    return {grad.to(ctx->saved_data["dtype"].toScalarType()), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// Every check depends only on shapes, dtypes and the targets, which are the
// same on every rank: each rank throws the same error before any collective.
void check_inputs(const torch::Tensor& logits_shard, const torch::Tensor& targets, const Group& group,
                  int64_t ignore_index) {
  TORCH_CHECK(group != nullptr, kName, ": the tensor-parallel group is null; pass the Communicator of the ranks "
              "that hold the vocabulary shards (e.g. DeviceMesh::group(\"tensor\"))");
  TORCH_CHECK(logits_shard.defined() && targets.defined(), kName, ": logits_shard and targets must be defined");
  TORCH_CHECK(at::isFloatingType(logits_shard.scalar_type()), kName, ": logits_shard must be floating point, got ",
              logits_shard.scalar_type());
  TORCH_CHECK(targets.scalar_type() == torch::kLong, kName, ": targets must be int64 vocabulary ids, got ",
              targets.scalar_type(), "; convert them with .to(torch::kLong)");
  TORCH_CHECK(logits_shard.dim() >= 1 && logits_shard.size(-1) > 0 &&
                  targets.sizes() == logits_shard.sizes().slice(0, logits_shard.dim() - 1),
              kName, ": logits_shard [..., V/size] and targets [...] must have the same leading dimensions, got ",
              logits_shard.sizes(), " and ", targets.sizes());
  TORCH_CHECK(targets.device() == logits_shard.device(), kName, ": targets are on ", targets.device(),
              " but logits_shard on ", logits_shard.device());
  const int64_t vocab = logits_shard.size(-1) * group->size();
  const torch::Tensor kept = targets.masked_select(targets.ne(ignore_index));
  if (kept.numel() == 0) return;
  const int64_t lo = kept.min().item<int64_t>(), hi = kept.max().item<int64_t>();
  TORCH_CHECK(lo >= 0 && hi < vocab, kName, ": target id ", lo < 0 ? lo : hi, " is outside the vocabulary [0, ",
              vocab, ") (", group->size(), " ranks x ", logits_shard.size(-1),
              " columns each); targets must be full-vocabulary ids or ignore_index (", ignore_index, ")");
}

}  // namespace

torch::Tensor vocab_parallel_cross_entropy(const torch::Tensor& logits_shard, const torch::Tensor& targets,
                                           const Group& group, const VocabParallelCrossEntropyOptions& options) {
  check_inputs(logits_shard, targets, group, options.ignore_index);
  const torch::Tensor flat_targets = targets.reshape({-1});
  const torch::Tensor rows = VocabParallelRowLoss::apply(logits_shard.reshape({-1, logits_shard.size(-1)}),
                                                         flat_targets, group.get(), options.ignore_index);
  switch (options.reduction) {
    case at::Reduction::None:
      return rows.view(targets.sizes());
    case at::Reduction::Sum:
      return rows.sum();
    case at::Reduction::Mean:
      return rows.sum() / flat_targets.ne(options.ignore_index).sum().to(rows.scalar_type());
    default:
      TORCH_CHECK(false, kName, ": reduction must be None, Mean or Sum, got ", static_cast<int>(options.reduction));
  }
}

}  // namespace paisoar::tensor_parallel
