// SyncBatchNorm as a custom autograd function: global mean and variance from
// one allreduce in forward, the two global reductions the input gradient
// needs from one allreduce in backward. Weight and bias gradients stay local
// (DDP averages them like any other gradient).
#include "paisoar/ddp/sync_batch_norm.h"

#include <torch/torch.h>

#include "paisoar/comm/communicator.h"

namespace paisoar::ddp {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Every dimension but the channel one.
std::vector<int64_t> reduce_dims(const torch::Tensor& x) {
  std::vector<int64_t> dims = {0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}

// Shape that broadcasts a [C] vector over [N, C, *].
std::vector<int64_t> channel_shape(const torch::Tensor& x) {
  std::vector<int64_t> shape(x.dim(), 1);
  shape[1] = x.size(1);
  return shape;
}

struct SyncBatchNormFunction : torch::autograd::Function<SyncBatchNormFunction> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor weight,
                               torch::Tensor bias, comm::Communicator* comm, double eps,
                               double momentum, torch::Tensor running_mean,
                               torch::Tensor running_var) {
    const int64_t channels = x.size(1);
    const auto dims = reduce_dims(x);
    torch::Tensor xd = x.to(torch::kDouble);
    torch::Tensor stats = torch::cat({xd.sum(dims), (xd * xd).sum(dims),
                                      torch::full({1}, static_cast<double>(x.numel() / channels),
                                                  xd.options())});
    comm->allreduce(stats, comm::ReduceOp::Sum).wait();
    const double count = stats[2 * channels].item<double>();
    TORCH_CHECK(count > 1, "SyncBatchNorm: the global batch has ", count,
                " value(s) per channel; training needs more than 1");
    torch::Tensor mean = stats.narrow(0, 0, channels) / count;
    torch::Tensor var = (stats.narrow(0, channels, channels) / count - mean * mean).clamp_min(0);
    torch::Tensor invstd = (var + eps).rsqrt();
    if (running_mean.defined()) {
      torch::NoGradGuard no_grad;
      running_mean.mul_(1 - momentum).add_(mean.to(running_mean.scalar_type()), momentum);
      running_var.mul_(1 - momentum)
          .add_((var * (count / (count - 1))).to(running_var.scalar_type()), momentum);
    }
    const auto shape = channel_shape(x);
    torch::Tensor xhat = ((xd - mean.view(shape)) * invstd.view(shape)).to(x.scalar_type());
    ctx->save_for_backward({xhat, invstd.to(torch::kFloat), weight});
    ctx->saved_data["comm"] = reinterpret_cast<int64_t>(comm);
    ctx->saved_data["count"] = count;
    torch::Tensor y = xhat;
    if (weight.defined()) y = y * weight.view(shape) + bias.view(shape);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const torch::Tensor& xhat = saved[0];
    const torch::Tensor& invstd = saved[1];
    const torch::Tensor& weight = saved[2];
    auto* comm = reinterpret_cast<comm::Communicator*>(ctx->saved_data["comm"].toInt());
    const double count = ctx->saved_data["count"].toDouble();
    const torch::Tensor& dy = grads[0];
    const auto dims = reduce_dims(xhat);
    const auto shape = channel_shape(xhat);
    torch::Tensor sum_dy = dy.sum(dims, false, torch::kDouble);
    torch::Tensor sum_dy_xhat = (dy * xhat).sum(dims, false, torch::kDouble);
    torch::Tensor local = torch::cat({sum_dy, sum_dy_xhat});
    torch::Tensor global = local.clone();
    comm->allreduce(global, comm::ReduceOp::Sum).wait();
    const int64_t channels = xhat.size(1);
    torch::Tensor mean_dy = (global.narrow(0, 0, channels) / count).to(dy.scalar_type());
    torch::Tensor mean_dy_xhat = (global.narrow(0, channels, channels) / count).to(dy.scalar_type());
    torch::Tensor scale = invstd.to(dy.scalar_type());
    if (weight.defined()) scale = scale * weight;
    torch::Tensor dx = (dy - mean_dy.view(shape) - xhat * mean_dy_xhat.view(shape)) * scale.view(shape);
    torch::Tensor dweight, dbias;
    if (weight.defined()) {
      dweight = sum_dy_xhat.to(weight.scalar_type());
      dbias = sum_dy.to(weight.scalar_type());
    }
    return {dx, dweight, dbias, torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

SyncBatchNormImpl::SyncBatchNormImpl(int64_t num_features,
                                     std::shared_ptr<comm::Communicator> comm,
                                     SyncBatchNormOptions options)
    : num_features_(num_features), comm_(std::move(comm)), options_(options) {
  TORCH_CHECK(num_features > 0, "SyncBatchNorm: num_features must be > 0, got ", num_features);
  TORCH_CHECK(comm_, "SyncBatchNorm needs a Communicator (the ranks whose batches it joins)");
  if (options_.affine) {
    weight = register_parameter("weight", torch::ones({num_features}));
    bias = register_parameter("bias", torch::zeros({num_features}));
  }
  if (options_.track_running_stats) {
    running_mean = register_buffer("running_mean", torch::zeros({num_features}));
    running_var = register_buffer("running_var", torch::ones({num_features}));
    num_batches_tracked = register_buffer("num_batches_tracked", torch::zeros({}, torch::kLong));
  }
}

torch::Tensor SyncBatchNormImpl::forward(const torch::Tensor& input) {
  TORCH_CHECK(input.dim() >= 2 && input.size(1) == num_features_,
              "SyncBatchNorm(", num_features_, "): expected input [N, ", num_features_,
              ", ...], got ", input.sizes());
  if (!is_training() && options_.track_running_stats) {
    return torch::batch_norm(input, weight, bias, running_mean, running_var, false, 0.0,
                             options_.eps, false);
  }
  if (options_.track_running_stats) num_batches_tracked.add_(1);
  return SyncBatchNormFunction::apply(input, weight, bias, comm_.get(), options_.eps,
                                      options_.momentum, running_mean, running_var);
}

void SyncBatchNormImpl::pretty_print(std::ostream& stream) const {
  stream << "paisoar::ddp::SyncBatchNorm(" << num_features_ << ", eps=" << options_.eps
         << ", momentum=" << options_.momentum << ", ranks=" << comm_->size() << ")";
}

}  // namespace paisoar::ddp
