// GradientReducer's per-step protocol: a post-hook on each parameter's
// gradient accumulator that launches a bucket once its last gradient is in
// (buckets in a fixed order on every rank), and an end-of-backward callback
// that launches the rest, waits, checks who used what, and rebuilds the
// buckets once (reducer_buckets.cpp holds the bucket storage).
#include "paisoar/ddp/gradient_reducer.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/torch.h>

#include <chrono>
#include <mutex>
#include <stdexcept>
#include <unordered_set>

#include "paisoar/amp/autocast.h"
#include "paisoar/comm/communicator.h"
#include "src/ddp/bucket_plan.h"
#include "src/ddp/model_sync.h"
#include "src/ddp/reducer_impl.h"

namespace paisoar::ddp {
namespace {

using Clock = GradientReducer::Impl::Clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double steady_seconds(Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

amp::AutocastOptions autocast_off(const torch::Tensor& on) {
  amp::AutocastOptions options;
  options.device = on.device().type();
  options.enabled = false;
  return options;
}

int64_t mib_to_bytes(double mib, const char* field) {
  TORCH_CHECK(mib > 0, "DdpOptions::", field, " must be > 0 MiB, got ", mib);
  return static_cast<int64_t>(mib * 1024 * 1024);
}

}  // namespace
GradientReducer::Impl::Impl(std::shared_ptr<torch::nn::Module> module,
                            std::shared_ptr<comm::Communicator> comm, DdpOptions options)
    : module_(std::move(module)),
      comm_(std::move(comm)),
      options_(options),
      first_cap_bytes_(mib_to_bytes(options.first_bucket_mb, "first_bucket_mb")),
      cap_bytes_(mib_to_bytes(options.bucket_cap_mb, "bucket_cap_mb")) {
  TORCH_CHECK(module_, "DistributedDataParallel needs a module");
  TORCH_CHECK(comm_, "DistributedDataParallel needs a Communicator");
  std::vector<std::pair<std::string, torch::Tensor>> named_params, named_buffers;
  for (const auto& p : module_->named_parameters()) {
    if (p.value().requires_grad()) named_params.emplace_back(p.key(), p.value());
  }
  for (const auto& b : module_->named_buffers()) named_buffers.emplace_back(b.key(), b.value());
  TORCH_CHECK(!named_params.empty(),
              "DistributedDataParallel: the module has no parameter that requires grad");
  detail::check_same_tensors(*comm_, "parameter", named_params);
  detail::check_same_tensors(*comm_, "buffer", named_buffers);

  std::vector<torch::Tensor> param_tensors, state;
  for (const auto& [name, t] : named_params) {
    params_.push_back({t, name, nullptr, 0, 0, 0});
    param_tensors.push_back(t);
    state.push_back(t);
  }
  for (const auto& [name, t] : named_buffers) {
    buffers_.push_back(t);
    state.push_back(t);
  }
  detail::broadcast_tensors(*comm_, state, /*root=*/0);

  // Gradients of the last layers are ready first.
  std::vector<size_t> order(params_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;
  build_buckets(detail::plan_buckets(param_tensors, order, first_cap_bytes_, cap_bytes_));
  ready_.assign(params_.size(), 0);
  unused_.assign(params_.size(), 0);
  used_.assign(params_.size(), 0);
  created_.assign(params_.size(), 0);
  hook_ = make_comm_hook(options_, comm_);

  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    p.accumulator = torch::autograd::impl::grad_accumulator(p.tensor);
    p.hook_key = p.accumulator->add_post_hook(
        std::make_unique<torch::autograd::utils::LambdaPostHook>(
            [this, i](const torch::autograd::variable_list& outputs,
                      const torch::autograd::variable_list&) {
              on_gradient(i);
              return outputs;
            }));
  }
}

GradientReducer::Impl::~Impl() {
  for (auto& p : params_) p.accumulator->del_post_hook(p.hook_key);
}

void GradientReducer::Impl::reset_iteration() {
  armed_ = false;
  local_pass_ = false;
  callback_queued_ = false;
  next_bucket_ = 0;
  std::fill(ready_.begin(), ready_.end(), 0);
  std::fill(unused_.begin(), unused_.end(), 0);
  arrival_.clear();
  error_.clear();
  for (auto& b : buckets_) b.pending = b.members.size();
}

void GradientReducer::Impl::drain_launched_buckets() {
  for (size_t b = 0; b < next_bucket_; ++b) {
    try {
      hook_->finish(b, buckets_[b].flat, buckets_[b].layout);
    } catch (const std::exception&) {
      // The failure that interrupted backward is what the user saw; this one follows from it.
    }
  }
}

void GradientReducer::Impl::record_error(const std::string& message) {
  if (error_.empty()) error_ = message;
}

void GradientReducer::Impl::pre_forward() {
  check_parameters_unchanged();
  if (options_.broadcast_buffers && !buffers_.empty()) {
    detail::broadcast_tensors(*comm_, buffers_, /*root=*/0);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (callback_queued_) {
    // The last backward failed before its end (an error inside autograd).
    drain_launched_buckets();
    std::fill(used_.begin(), used_.end(), 0);
    std::fill(created_.begin(), created_.end(), 0);
  }
  reset_iteration();
  // Forwards without gradients (evaluation under NoGradGuard) arm nothing.
  const bool grad = torch::GradMode::is_enabled();
  armed_ = sync_ && grad;
  local_pass_ = !sync_ && grad;
  finished_ = false;
}

void GradientReducer::Impl::post_forward(const std::vector<torch::Tensor>& outputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!armed_ || !options_.find_unused_parameters || outputs.empty()) return;
  // Walk the graph: accumulators it does not reach belong to unused parameters,
  // whose buckets then need not wait for them.
  std::unordered_set<torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> stack;
  for (const auto& out : outputs) {
    if (!out.defined() || !out.requires_grad()) continue;
    auto fn = out.grad_fn() ? out.grad_fn() : torch::autograd::impl::try_get_grad_accumulator(out);
    if (fn && seen.insert(fn.get()).second) stack.push_back(fn.get());
  }
  while (!stack.empty()) {
    auto* node = stack.back();
    stack.pop_back();
    for (const auto& edge : node->next_edges()) {
      if (edge.function && seen.insert(edge.function.get()).second) stack.push_back(edge.function.get());
    }
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    unused_[i] = seen.count(params_[i].accumulator.get()) ? 0 : 1;
  }
}

void GradientReducer::Impl::mark_unused_ready() {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!unused_[i] || ready_[i]) continue;
    adopt_gradient(i);
    ready_[i] = 1;
    --buckets_[params_[i].bucket].pending;
  }
}

void GradientReducer::Impl::on_gradient(size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& p = params_[index];
  if (!armed_) {
    if (local_pass_) used_[index] = 1;  // counted at the next synchronised backward
    if (finished_) {
      // The same on every rank running the same program, and no collective is
      // pending: safe to throw here.
      throw std::runtime_error(
          "DistributedDataParallel: a second backward after the one that averaged this step's "
          "gradients (e.g. loss1.backward(retain_graph) then loss2.backward()); its gradients "
          "would not be averaged. Sum the losses and call backward once, or run the earlier "
          "backward passes under no_sync()");
    }
    return;
  }
  if (!callback_queued_) {
    torch::autograd::Engine::get_default_engine().queue_callback([this] { finalize(); });
    callback_queued_ = true;
    first_ready_ = Clock::now();
    mark_unused_ready();
  }
  if (ready_[index]) {
    record_error(
        "DistributedDataParallel: parameter '" + p.name + "' received a gradient although " +
        (unused_[index] ? "forward's outputs do not reach it (the loss uses it outside the "
                          "module's forward, e.g. a penalty on the weights); return such terms "
                          "from forward, or set DdpOptions::find_unused_parameters = false"
                        : "it already had one in this backward (reentrant backward, e.g. "
                          "reentrant activation checkpointing); use a non-reentrant variant"));
    return;
  }
  try {
    adopt_gradient(index);
  } catch (const std::exception& e) {
    record_error(e.what());  // the bucket still launches, with this slice as it is
  }
  ready_[index] = 1;
  used_[index] = 1;
  arrival_.push_back(index);
  if (--buckets_[p.bucket].pending == 0 && options_.overlap) launch_ready_buckets();
}

void GradientReducer::Impl::launch_ready_buckets() {
  if (next_bucket_ >= buckets_.size() || buckets_[next_bucket_].pending != 0) return;
  // Hooks compute (casts, PowerSGD's products) in their own precision, not the caller's.
  amp::autocast full_precision(autocast_off(buckets_[next_bucket_].flat));
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
    auto& b = buckets_[next_bucket_];
    b.launched = Clock::now();
    hook_->launch(next_bucket_, b.flat, b.layout);
    ++next_bucket_;
  }
}

void GradientReducer::Impl::finalize() {
  std::unique_lock<std::mutex> lock(mutex_);
  stats_ = ReducerStats{};
  stats_.backward_s = seconds_since(first_ready_);
  stats_.buckets = buckets_.size();
  struct EndOfStep {
    Impl* self;
    ~EndOfStep() {
      self->reset_iteration();
      std::fill(self->used_.begin(), self->used_.end(), 0);
      std::fill(self->created_.begin(), self->created_.end(), 0);
      self->finished_ = true;
    }
  } end_of_step{this};

  // Gradients that never came count as zeros here (an error below unless
  // find_unused_parameters); every bucket is launched so no rank is left waiting.
  for (size_t i = 0; i < params_.size(); ++i) {
    if (ready_[i]) continue;
    try {
      adopt_gradient(i);
    } catch (const std::exception& e) {
      record_error(e.what());
    }
    ready_[i] = 1;
    --buckets_[params_[i].bucket].pending;
  }
  launch_ready_buckets();
  TORCH_INTERNAL_ASSERT(next_bucket_ == buckets_.size());
  // Per parameter, the ranks that produced a gradient; last, the ranks with an error.
  const auto n = static_cast<int64_t>(used_.size());
  torch::Tensor status = torch::empty({n + 1}, torch::kInt32);
  std::copy(used_.begin(), used_.end(), status.data_ptr<int>());
  status[n] = error_.empty() ? 0 : 1;
  status = status.to(buckets_.front().flat.device());
  const auto wait_start = Clock::now();
  comm::Work status_work = comm_->allreduce(status, comm::ReduceOp::Sum);
  {
    amp::autocast full_precision(autocast_off(buckets_.front().flat));
    stats_.bucket_spans.reserve(buckets_.size());
    for (size_t b = 0; b < buckets_.size(); ++b) {
      auto& bucket = buckets_[b];
      hook_->finish(b, bucket.flat, bucket.layout);
      stats_.bucket_spans.push_back({b, bucket.flat.numel() * bucket.flat.element_size(),
                                     steady_seconds(bucket.launched), steady_seconds(Clock::now())});
    }
  }
  status_work.wait();
  stats_.exposed_comm_s = seconds_since(wait_start);
  stats_.bytes = hook_->take_bytes() + status.numel() * status.element_size();
  status = status.cpu();
  if (status[n].item<int>() > 0) {
    throw std::runtime_error(!error_.empty()
                                 ? error_
                                 : "DistributedDataParallel: another rank hit an error in this "
                                   "backward (its output says which); this step's gradients are "
                                   "not a valid average");
  }
  check_everyone_used_everything(status);
  if (options_.rebuild_buckets && !rebuilt_) stats_.rebuilt = rebuild_in_arrival_order();
}

void GradientReducer::Impl::check_everyone_used_everything(const torch::Tensor& used_counts) {
  const int world = comm_->size();
  const auto* counts = used_counts.data_ptr<int>();
  for (size_t i = 0; i < params_.size(); ++i) {
    if (counts[i] == world) continue;
    if (options_.find_unused_parameters) {
      // Unused everywhere: the gradient is as it was before backward (its
      // average over ranks equals it), or undefined again if it was undefined.
      if (counts[i] == 0 && created_[i]) params_[i].tensor.mutable_grad() = torch::Tensor();
      continue;
    }
    throw std::runtime_error(
        "DistributedDataParallel: parameter '" + params_[i].name +
        "' received no gradient in this backward on " + std::to_string(world - counts[i]) +
        " of " + std::to_string(world) + " ranks (this rank: " + (used_[i] ? "got one" : "none") +
        "). If the model's forward may leave parameters out of the loss, set "
        "DdpOptions::find_unused_parameters = true; otherwise make every parameter take part");
  }
}

GradientReducer::GradientReducer(std::shared_ptr<torch::nn::Module> module,
                                 std::shared_ptr<comm::Communicator> comm, DdpOptions options)
    : impl_(std::make_unique<Impl>(std::move(module), std::move(comm), options)) {}

GradientReducer::~GradientReducer() = default;

void GradientReducer::pre_forward() { impl_->pre_forward(); }

void GradientReducer::post_forward(const std::vector<torch::Tensor>& outputs) {
  impl_->post_forward(outputs);
}

void GradientReducer::set_sync(bool on) {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  impl_->sync_ = on;
}

bool GradientReducer::sync() const { return impl_->sync_; }

void GradientReducer::set_comm_hook(std::unique_ptr<CommHook> hook) {
  TORCH_CHECK(hook, "set_comm_hook: the hook is null");
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  TORCH_CHECK(!impl_->callback_queued_ && impl_->next_bucket_ == 0,
              "set_comm_hook: called during backward; call it between steps");
  impl_->hook_ = std::move(hook);
}

const ReducerStats& GradientReducer::last_stats() const { return impl_->stats_; }

std::vector<std::vector<size_t>> GradientReducer::bucket_assignment() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : impl_->buckets_) out.push_back(b.members);
  return out;
}

}  // namespace paisoar::ddp
