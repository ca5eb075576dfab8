// ZeRO stage 3: a unit's parameters live in one flat storage that is allocated
// and all-gathered from the ranks' fp32 master chunks when the layer runs, and
// released (storage resized to 0 bytes, as FSDP does) when it is done. Tensors
// autograd saved from the layer's forward share that storage, so re-gathering
// it before the layer's backward makes them valid again.
#include <torch/torch.h>

#include "paisoar/comm/communicator.h"
#include "src/util/storage_release.h"
#include "src/zero/zero_impl.h"

namespace paisoar::zero {
namespace {

// Identity in forward; its backward runs just before the layer's own backward
// nodes (they consume its output gradient), so it re-gathers the layer there
// and prefetches the layer before it.
struct RegatherBeforeBackward : torch::autograd::Function<RegatherBeforeBackward> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x, int64_t engine,
                               std::vector<int64_t> units) {
    ctx->saved_data["engine"] = engine;
    ctx->saved_data["units"] = units;
    return x;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto* engine = reinterpret_cast<ZeroOptimizer::Impl*>(ctx->saved_data["engine"].toInt());
    for (int64_t u : ctx->saved_data["units"].toIntVector()) engine->on_pre_backward(static_cast<size_t>(u));
    return {grads[0], torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

void ZeroOptimizer::Impl::gather_async(size_t u) {
  auto& unit = units_[u];
  if (unit.gathered || unit.gathering) return;
  torch::NoGradGuard no_grad;
  ::paisoar::detail::allocate_storage(unit.full, static_cast<size_t>(unit.full.numel()) * unit.full.element_size());
  torch::Tensor mine = own_chunk(unit.full);
  mine.copy_(unit.master);  // rounded once for bf16/fp16 models
  unit.gather_work = comm_->allgather_into(unit.full, mine);
  unit.gathering = true;
}

void ZeroOptimizer::Impl::wait_gathered(size_t u) {
  auto& unit = units_[u];
  if (!unit.gathered && !unit.gathering) gather_async(u);
  if (unit.gathering) {
    unit.gather_work.wait();
    unit.gathering = false;
    unit.gathered = true;
  }
}

void ZeroOptimizer::Impl::free_params(size_t u) {
  auto& unit = units_[u];
  if (unit.gathering) wait_gathered(u);  // peers still send into it until the gather is done
  if (!unit.gathered) return;
  ::paisoar::detail::release_storage(unit.full);
  unit.gathered = false;
}

void ZeroOptimizer::Impl::unit_forward_begin(size_t k) {
  TORCH_CHECK_INDEX(k < units_.size(), "ZeRO stage 3: unit ", k, " of ", units_.size());
  std::lock_guard<std::mutex> lock(mutex_);
  wait_gathered(k);
  if (options_.prefetch && k + 1 < units_.size()) gather_async(k + 1);
}

void ZeroOptimizer::Impl::unit_forward_end(size_t k) {
  TORCH_CHECK_INDEX(k < units_.size(), "ZeRO stage 3: unit ", k, " of ", units_.size());
  std::lock_guard<std::mutex> lock(mutex_);
  free_params(k);
}

torch::Tensor ZeroOptimizer::Impl::run_in_units(const std::vector<size_t>& units, const torch::Tensor& x,
                                                const std::function<torch::Tensor(const torch::Tensor&)>& fn) {
  TORCH_CHECK(options_.stage == 3, "ZeroOptimizer::run_in_units: the parameters are gathered only at stage 3");
  for (size_t k : units) unit_forward_begin(k);
  torch::Tensor out;
  try {
    out = fn(x);
  } catch (...) {
    for (size_t k : units) unit_forward_end(k);
    throw;
  }
  if (torch::GradMode::is_enabled() && out.requires_grad()) {
    out = RegatherBeforeBackward::apply(out, reinterpret_cast<int64_t>(this),
                                        std::vector<int64_t>(units.begin(), units.end()));
  }
  for (size_t k : units) unit_forward_end(k);
  return out;
}

void ZeroOptimizer::Impl::on_pre_backward(size_t k) {
  TORCH_CHECK_INDEX(k < units_.size(), "ZeRO stage 3: unit ", k, " of ", units_.size());
  std::lock_guard<std::mutex> lock(mutex_);
  wait_gathered(k);
  if (options_.prefetch && k > 0) gather_async(k - 1);
}

}  // namespace paisoar::zero
