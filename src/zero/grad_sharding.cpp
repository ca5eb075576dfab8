// ZeroOptimizer's gradient protocol: a post-hook on each parameter's gradient
// accumulator gathers the gradient into its unit's flat buffer; when a unit is
// complete (and every unit before it in order_ was launched) its average is
// reduce-scattered, so each rank receives only its chunk. At most
// max_inflight_units are in flight: the oldest is completed (its full gradient
// freed from stage 2) before the next launches. The end-of-backward callback
// launches the rest, waits, and releases what this stage does not keep.
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>

#include "paisoar/comm/communicator.h"
#include "src/util/storage_alias.h"
#include "src/zero/zero_impl.h"

namespace paisoar::zero {

void ZeroOptimizer::Impl::install_hooks() {
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    p.accumulator = torch::autograd::impl::grad_accumulator(p.tensor);
    p.hook_key = p.accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, i](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          on_gradient(i);
          return outputs;
        }));
  }
}

void ZeroOptimizer::Impl::reset_iteration() {
  callback_queued_ = false;
  next_launch_ = 0;
  next_complete_ = 0;
  std::fill(ready_.begin(), ready_.end(), 0);
  for (size_t u = 0; u < units_.size(); ++u) units_[u].pending = layout_->units()[u].params.size();
  error_.clear();
}

void ZeroOptimizer::Impl::ensure_full_grad(size_t u) {
  auto& unit = units_[u];
  if (!unit.full_grad.defined()) unit.full_grad = torch::zeros({layout_->units()[u].padded}, unit.full.options());
}

void ZeroOptimizer::Impl::adopt_gradient(size_t i) {
  auto& p = params_[i];
  const size_t u = layout_->unit_of(i);
  ensure_full_grad(u);
  const auto& flat = units_[u].full_grad;
  const int64_t offset = layout_->offset_of(i);
  const torch::Tensor& g = p.tensor.grad();
  if (detail::starts_at(g, flat, offset)) return;
  if (g.defined() && g.scalar_type() != flat.scalar_type()) {
    throw std::runtime_error("ZeroOptimizer: parameter '" + p.name + "' has a gradient of dtype " +
                             c10::toString(g.scalar_type()) + " but its unit holds " +
                             c10::toString(flat.scalar_type()) +
                             ": convert the model before building the ZeroOptimizer, not after");
  }
  torch::NoGradGuard no_grad;
  // A gradient something else allocated (the first one of a backward) replaces the slice.
  if (g.defined()) flat.narrow(0, offset, p.tensor.numel()).copy_(g.reshape({-1}));
  p.tensor.mutable_grad() = detail::storage_alias(flat, offset, p.tensor.sizes());
}

void ZeroOptimizer::Impl::on_gradient(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!callback_queued_) {
    torch::autograd::Engine::get_default_engine().queue_callback([this] { finalize(); });
    callback_queued_ = true;
  }
  if (!sync_) {  // accumulation: gradients stay local and whole until the synchronised backward
    try {
      adopt_gradient(index);
    } catch (const std::exception& e) {
      if (error_.empty()) error_ = e.what();
    }
    const size_t u = layout_->unit_of(index);
    if (options_.stage == 3 && !ready_[index]) {
      ready_[index] = 1;
      if (--units_[u].pending == 0) free_params(u);
    }
    return;
  }
  if (ready_[index]) {
    if (error_.empty()) {
      error_ = "ZeroOptimizer: parameter '" + params_[index].name +
               "' received a second gradient in one backward (reentrant backward, e.g. reentrant "
               "activation checkpointing); use a non-reentrant variant";
    }
    return;
  }
  try {
    adopt_gradient(index);
  } catch (const std::exception& e) {
    if (error_.empty()) error_ = e.what();
  }
  ready_[index] = 1;
  const size_t u = layout_->unit_of(index);
  if (--units_[u].pending == 0) {
    if (options_.stage == 3) free_params(u);  // its backward is done: every use of it produced its gradient
    if (options_.overlap) launch_ready_units();
  }
}

void ZeroOptimizer::Impl::launch_ready_units() {
  const size_t window = static_cast<size_t>(std::max(1, options_.max_inflight_units));
  while (next_launch_ < order_.size() && units_[order_[next_launch_]].pending == 0) {
    launch_reduce(order_[next_launch_++]);
    while (next_launch_ - next_complete_ > window) complete_reduce(order_[next_complete_++]);
  }
}

void ZeroOptimizer::Impl::complete_reduce(size_t u) {
  auto& unit = units_[u];
  unit.reduce_work.wait();
  torch::NoGradGuard no_grad;
  if (unit.reduced.defined()) {
    unit.grad_chunk.copy_(unit.reduced);
    unit.reduced = torch::Tensor();
  }
  if (options_.stage == 1) {
    // Keep only the averaged chunk: the other chunks held this rank's local
    // sums, which the next backward must not add to.
    const int64_t chunk = layout_->units()[u].chunk;
    unit.full_grad.narrow(0, 0, rank_ * chunk).zero_();
    unit.full_grad.narrow(0, (rank_ + 1) * chunk, (world_ - rank_ - 1) * chunk).zero_();
    return;
  }
  for (size_t i : layout_->units()[u].params) params_[i].tensor.mutable_grad() = torch::Tensor();
  unit.full_grad = torch::Tensor();
}

void ZeroOptimizer::Impl::launch_reduce(size_t u) {
  auto& unit = units_[u];
  ensure_full_grad(u);
  torch::Tensor out;
  if (chunk_aliases_grad()) {
    out = own_chunk(unit.full_grad);  // in place
  } else if (dtype_ == torch::kFloat) {
    out = unit.grad_chunk;
  } else {
    unit.reduced = torch::empty({layout_->units()[u].chunk}, unit.full_grad.options());
    out = unit.reduced;
  }
  unit.reduce_work = comm_->reduce_scatter(out, unit.full_grad, comm::ReduceOp::Avg);
}

void ZeroOptimizer::Impl::release_full_grads() {
  for (auto& p : params_) p.tensor.mutable_grad() = torch::Tensor();
  for (auto& unit : units_) unit.full_grad = torch::Tensor();
}

void ZeroOptimizer::Impl::finalize() {
  std::lock_guard<std::mutex> lock(mutex_);
  struct EndOfBackward {
    Impl* self;
    ~EndOfBackward() {
      if (self->options_.stage == 3) {
        for (size_t u = 0; u < self->units_.size(); ++u) self->free_params(u);
      }
      self->reset_iteration();
    }
  } end{this};
  if (!sync_) {
    if (!error_.empty()) throw std::runtime_error(error_);
    return;
  }
  torch::NoGradGuard no_grad;
  // Gradients that never came count as zeros; every unit is launched so no rank waits.
  for (size_t i = 0; i < params_.size(); ++i) {
    if (ready_[i]) continue;
    try {
      adopt_gradient(i);
    } catch (const std::exception& e) {
      if (error_.empty()) error_ = e.what();
    }
    ready_[i] = 1;
    --units_[layout_->unit_of(i)].pending;
  }
  launch_ready_units();
  TORCH_INTERNAL_ASSERT(next_launch_ == order_.size());
  while (next_complete_ < order_.size()) complete_reduce(order_[next_complete_++]);
  if (options_.stage >= 2) release_full_grads();
  if (!error_.empty()) throw std::runtime_error(error_);
}

}  // namespace paisoar::zero
