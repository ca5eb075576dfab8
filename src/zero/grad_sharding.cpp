// ZeroOptimizer's GradientSink: each gradient lives in its unit's flat
// buffer; when a unit is complete (and every unit before it in order_ was
// launched) its average is reduce-scattered, so each rank receives only its
// chunk. At most max_inflight_units are in flight: the oldest is completed
// (its full gradient freed from stage 2) before the next launches. The
// GradientEngine decides when (hooks, readiness, the agreement across ranks
// that makes every rank fail together); this file decides how.
#include <torch/torch.h>

#include <c10/util/Exception.h>

#include <algorithm>
#include <stdexcept>

#include "paisoar/comm/communicator.h"
#include "src/util/storage_alias.h"
#include "src/zero/zero_impl.h"

namespace paisoar::zero {

void ZeroOptimizer::Impl::start_engine() {
  std::vector<grad::NamedParameter> named;
  for (const auto& p : params_) named.push_back({p.name, p.tensor});
  std::vector<std::vector<size_t>> groups;
  for (const auto& unit : layout_->units()) groups.push_back(unit.params);
  grad::EngineOptions engine_options;
  engine_options.component = "ZeroOptimizer";
  engine_options.find_unused_parameters = options_.find_unused_parameters;
  engine_options.find_unused_option = "ZeroOptions::find_unused_parameters";
  engine_ = std::make_unique<grad::GradientEngine>(std::move(named), std::move(groups), *this, comm_,
                                                   engine_options);
}

void ZeroOptimizer::Impl::ensure_full_grad(size_t u) {
  auto& unit = units_[u];
  if (!unit.full_grad.defined()) unit.full_grad = torch::zeros({layout_->units()[u].padded}, unit.full.options());
}

bool ZeroOptimizer::Impl::adopt(size_t i) {
  auto& p = params_[i];
  const size_t u = layout_->unit_of(i);
  ensure_full_grad(u);
  const auto& flat = units_[u].full_grad;
  const int64_t offset = layout_->offset_of(i);
  const torch::Tensor& g = p.tensor.grad();
  if (detail::starts_at(g, flat, offset)) return false;
  if (g.defined() && g.scalar_type() != flat.scalar_type()) {
    C10_THROW_ERROR(Error, "ZeroOptimizer: parameter '" + p.name + "' has a gradient of dtype " +
                             c10::toString(g.scalar_type()) + " but its unit holds " +
                             c10::toString(flat.scalar_type()) +
                             ": convert the model before building the ZeroOptimizer, not after");
  }
  torch::NoGradGuard no_grad;
  // A gradient something else allocated (the first one of a backward) replaces the slice.
  if (g.defined()) flat.narrow(0, offset, p.tensor.numel()).copy_(g.reshape({-1}));
  const bool created = !g.defined();
  p.tensor.mutable_grad() = detail::storage_alias(flat, offset, p.tensor.sizes());
  return created;
}

void ZeroOptimizer::Impl::group_ready(size_t u) {
  units_[u].ready = true;
  if (options_.stage == 3) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_params(u);  // its backward is done: every use of it produced its gradient
  }
  if (options_.overlap) launch_ready_units();
}

void ZeroOptimizer::Impl::local_group_done(size_t u) {
  if (options_.stage != 3) return;  // gradients stay local and whole until the synchronised backward
  std::lock_guard<std::mutex> lock(mutex_);
  free_params(u);
}

void ZeroOptimizer::Impl::launch_ready_units() {
  const size_t window = static_cast<size_t>(std::max(1, options_.max_inflight_units));
  while (next_launch_ < order_.size() && units_[order_[next_launch_]].ready) {
    launch_reduce(order_[next_launch_++]);
    while (next_launch_ - next_complete_ > window) complete_reduce(order_[next_complete_++]);
  }
}

void ZeroOptimizer::Impl::launch_remaining() {
  launch_ready_units();
  TORCH_INTERNAL_ASSERT(next_launch_ == order_.size());
}

void ZeroOptimizer::Impl::wait_all() {
  while (next_complete_ < order_.size()) complete_reduce(order_[next_complete_++]);
}

void ZeroOptimizer::Impl::drain() noexcept {
  for (; next_complete_ < next_launch_; ++next_complete_) {
    try {
      units_[order_[next_complete_]].reduce_work.wait();
    } catch (const std::exception&) {
      // The failure that interrupted backward is what the user saw; this one follows from it.
    }
  }
}

void ZeroOptimizer::Impl::complete_reduce(size_t u) {
  auto& unit = units_[u];
  unit.reduce_work.wait();
  torch::NoGradGuard no_grad;
  if (unit.reduced.defined()) {
    unit.grad_chunk.copy_(unit.reduced);
    unit.reduced = torch::Tensor();
    unit.reduce_in = torch::Tensor();
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
  const auto low = options_.reduce_dtype;
  if (low != torch::ScalarType::Undefined && low != dtype_) {
    torch::NoGradGuard no_grad;
    unit.reduce_in = unit.full_grad.to(low);
    unit.reduced = torch::empty({layout_->units()[u].chunk}, unit.reduce_in.options());
    unit.reduce_work = comm_->reduce_scatter(unit.reduced, unit.reduce_in, comm::ReduceOp::Avg);
    return;
  }
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

void ZeroOptimizer::Impl::end_backward(bool synchronised) noexcept {
  if (options_.stage == 3) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t u = 0; u < units_.size(); ++u) {
      try {
        free_params(u);
      } catch (const std::exception&) {
        // A gather that failed: its error reached the layer that waited for it.
      }
    }
  }
  if (synchronised && options_.stage >= 2) release_full_grads();
  next_launch_ = 0;
  next_complete_ = 0;
  for (auto& unit : units_) unit.ready = false;
}

}  // namespace paisoar::zero
