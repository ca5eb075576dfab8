// GradientReducer::Impl's bucket storage: gradients as plain aliases of the
// bucket buffers, adopting gradients something else allocated, checking the
// parameters did not change under it, and the one-time rebuild in the order
// gradients arrived (rank 0's, so every rank regroups the engine the same way).
#include <torch/torch.h>

#include <c10/util/Exception.h>

#include <stdexcept>

#include "paisoar/comm/communicator.h"
#include "src/ddp/reducer_impl.h"
#include "src/grad/bucket_plan.h"
#include "src/util/storage_alias.h"

namespace paisoar::ddp {

void GradientReducer::Impl::build_buckets(const std::vector<std::vector<size_t>>& plan) {
  torch::NoGradGuard no_grad;
  std::vector<Bucket> buckets;
  for (size_t b = 0; b < plan.size(); ++b) {
    Bucket bucket;
    bucket.members = plan[b];
    int64_t total = 0;
    for (size_t i : bucket.members) {
      bucket.layout.offsets.push_back(total);
      bucket.layout.shapes.push_back(params_[i].tensor.sizes().vec());
      total += params_[i].tensor.numel();
    }
    const auto& first = params_[bucket.members.front()].tensor;
    bucket.flat = torch::zeros({total}, first.options().requires_grad(false));
    bucket.layout.bucket_count = plan.size();
    for (size_t k = 0; k < bucket.members.size(); ++k) {
      auto& p = params_[bucket.members[k]];
      p.bucket = b;
      p.offset = bucket.layout.offsets[k];
      bucket.layout.parameters.push_back(p.tensor);
      const torch::Tensor& g = p.tensor.grad();
      // Undefined: stays so until backward produces one. Not a view: .grad stays autograd's.
      if (!g.defined() || !options_.gradient_as_bucket_view) continue;
      bucket.flat.narrow(0, p.offset, p.tensor.numel()).copy_(g.reshape({-1}));
      p.tensor.mutable_grad() = paisoar::detail::storage_alias(bucket.flat, p.offset, p.tensor.sizes());
    }
    buckets.push_back(std::move(bucket));
  }
  buckets_ = std::move(buckets);
}

bool GradientReducer::Impl::adopt(size_t i) {
  auto& p = params_[i];
  const auto& flat = buckets_[p.bucket].flat;
  const torch::Tensor& g = p.tensor.grad();
  if (options_.gradient_as_bucket_view && paisoar::detail::starts_at(g, flat, p.offset)) return false;
  if (g.defined() && g.scalar_type() != flat.scalar_type()) {
    C10_THROW_ERROR(Error, "DistributedDataParallel: parameter '" + p.name +
                             "' has a gradient of dtype " + c10::toString(g.scalar_type()) +
                             " but its bucket holds " + c10::toString(flat.scalar_type()) +
                             ": convert the model (model->to(dtype)) before wrapping it, not after");
  }
  torch::NoGradGuard no_grad;
  auto slice = flat.narrow(0, p.offset, p.tensor.numel());
  const bool created = !g.defined();
  if (created) {
    slice.zero_();
  } else {
    slice.copy_(g.reshape({-1}));
  }
  if (options_.gradient_as_bucket_view) {
    p.tensor.mutable_grad() = paisoar::detail::storage_alias(flat, p.offset, p.tensor.sizes());
  }
  return created;
}

void GradientReducer::Impl::copy_back_gradients() {
  torch::NoGradGuard no_grad;
  for (auto& p : params_) {
    const auto slice = buckets_[p.bucket].flat.narrow(0, p.offset, p.tensor.numel()).view(p.tensor.sizes());
    if (p.tensor.grad().defined()) {
      p.tensor.mutable_grad().copy_(slice);
    } else {
      p.tensor.mutable_grad() = slice.clone();
    }
  }
}

void GradientReducer::Impl::check_parameters_unchanged() const {
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& p = params_[i];
    const auto& flat = buckets_[p.bucket].flat;
    if (p.tensor.scalar_type() != flat.scalar_type() || p.tensor.device() != flat.device() ||
        engine_->accumulator_replaced(i)) {
      C10_THROW_ERROR(Error, 
          "DistributedDataParallel: parameter '" + p.name + "' was converted or replaced after "
          "the model was wrapped (now " + c10::toString(p.tensor.scalar_type()) + " on " +
          p.tensor.device().str() + ", its bucket " + c10::toString(flat.scalar_type()) + " on " +
          flat.device().str() + "): move or convert the model before wrapping it");
    }
  }
}

bool GradientReducer::Impl::rebuild_in_arrival_order(const std::vector<size_t>& arrival) {
  rebuilt_ = true;
  // Rank 0's order, so every rank builds the same buckets; unused ones last.
  std::vector<char> seen(params_.size(), 0);
  std::vector<int64_t> order;
  for (size_t i : arrival) {
    order.push_back(static_cast<int64_t>(i));
    seen[i] = 1;
  }
  for (size_t i = params_.size(); i-- > 0;) {
    if (!seen[i]) order.push_back(static_cast<int64_t>(i));
  }
  torch::Tensor shared = torch::tensor(order, torch::kInt64);
  comm_->broadcast(shared, 0).wait();
  std::vector<size_t> new_order(params_.size());
  std::vector<torch::Tensor> tensors;
  for (size_t k = 0; k < params_.size(); ++k) {
    new_order[k] = static_cast<size_t>(shared[k].item<int64_t>());
    tensors.push_back(params_[k].tensor);
  }
  auto plan = grad::detail::plan_buckets(tensors, new_order, caps_bytes_);
  std::vector<std::vector<size_t>> current;
  for (const auto& b : buckets_) current.push_back(b.members);
  if (plan == current) return false;
  // Gradients keep their (averaged) values: build_buckets copies them over.
  for (auto& p : params_) {
    if (options_.gradient_as_bucket_view && p.tensor.grad().defined()) {
      p.tensor.mutable_grad() = p.tensor.grad().clone();
    }
  }
  build_buckets(plan);
  engine_->set_groups(plan);
  hook_->reset();
  return true;
}

}  // namespace paisoar::ddp
