// GradientReducer: DDP over the GradientEngine. A bucket's comm hook is
// launched once its last gradient is in and every bucket before it was
// launched (the same order on every rank); the end of backward launches the
// rest and waits; after the first synchronised step the buckets are rebuilt
// once in the order gradients arrived (reducer_buckets.cpp holds the storage).
#include "paisoar/ddp/gradient_reducer.h"

#include <torch/torch.h>

#include <chrono>
#include <mutex>

#include "paisoar/amp/autocast.h"
#include "paisoar/comm/communicator.h"
#include "src/ddp/reducer_impl.h"
#include "src/grad/bucket_plan.h"
#include "src/grad/model_sync.h"

namespace paisoar::ddp {
namespace {

constexpr const char* kComponent = "DistributedDataParallel";

double steady_seconds(GradientReducer::Impl::Clock::time_point t) {
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

std::vector<int64_t> caps_in_bytes(const DdpOptions& options) {
  if (options.bucket_caps_mb.empty()) {
    return {mib_to_bytes(options.first_bucket_mb, "first_bucket_mb"),
            mib_to_bytes(options.bucket_cap_mb, "bucket_cap_mb")};
  }
  std::vector<int64_t> caps;
  for (double mib : options.bucket_caps_mb) caps.push_back(mib_to_bytes(mib, "bucket_caps_mb[i]"));
  return caps;
}

}  // namespace

GradientReducer::Impl::Impl(std::shared_ptr<torch::nn::Module> module,
                            std::shared_ptr<comm::Communicator> comm, DdpOptions options)
    : module_(std::move(module)),
      comm_(std::move(comm)),
      options_(options),
      caps_bytes_(caps_in_bytes(options)) {
  TORCH_CHECK(module_, kComponent, " needs a module");
  TORCH_CHECK(comm_, kComponent, " needs a Communicator");
  std::vector<std::pair<std::string, torch::Tensor>> named_params, named_buffers;
  for (const auto& p : module_->named_parameters()) {
    if (p.value().requires_grad()) named_params.emplace_back(p.key(), p.value());
  }
  for (const auto& b : module_->named_buffers()) named_buffers.emplace_back(b.key(), b.value());
  TORCH_CHECK(!named_params.empty(), kComponent, ": the module has no parameter that requires grad");
  if (options_.init_sync) {
    grad::detail::check_same_tensors(*comm_, "DistributedDataParallel", "parameter", named_params);
    grad::detail::check_same_tensors(*comm_, "DistributedDataParallel", "buffer", named_buffers);
  }

  std::vector<torch::Tensor> param_tensors, state;
  std::vector<grad::NamedParameter> engine_params;
  for (const auto& [name, t] : named_params) {
    params_.push_back({t, name, 0, 0});
    param_tensors.push_back(t);
    state.push_back(t);
    engine_params.push_back({name, t});
  }
  for (const auto& [name, t] : named_buffers) {
    buffers_.push_back(t);
    state.push_back(t);
  }
  if (options_.init_sync) grad::detail::broadcast_tensors(*comm_, state, /*root=*/0);

  // Gradients of the last layers are ready first.
  std::vector<size_t> order(params_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;
  const auto plan = grad::detail::plan_buckets(param_tensors, order, caps_bytes_);
  build_buckets(plan);
  hook_ = make_comm_hook(options_, comm_);

  grad::EngineOptions engine_options;
  engine_options.component = kComponent;
  engine_options.find_unused_parameters = options_.find_unused_parameters;
  engine_options.find_unused_option =
      options_.python_front_end ? "find_unused_parameters" : "DdpOptions::find_unused_parameters";
  engine_options.python_literals = options_.python_front_end;
  engine_options.missing_gradient_error_at_next_forward = options_.python_front_end;
  engine_options.sync_only_after_forward = options_.python_front_end;
  engine_options.static_graph = options_.static_graph;
  engine_options.one_backward_per_forward = true;
  engine_ = std::make_unique<grad::GradientEngine>(std::move(engine_params), plan, *this, comm_, engine_options);
}

void GradientReducer::Impl::pre_forward() {
  check_parameters_unchanged();
  if (options_.broadcast_buffers && !buffers_.empty()) {
    grad::detail::broadcast_tensors(*comm_, buffers_, /*root=*/0);
  }
  engine_->begin_forward();
}

void GradientReducer::Impl::group_ready(size_t bucket) {
  buckets_[bucket].ready = true;
  if (options_.overlap) launch_ready_buckets();
}

void GradientReducer::Impl::launch_ready_buckets() {
  if (next_bucket_ >= buckets_.size() || !buckets_[next_bucket_].ready) return;
  // Hooks compute (casts, PowerSGD's products) in their own precision, not the caller's.
  amp::autocast full_precision(autocast_off(buckets_[next_bucket_].flat));
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].ready) {
    auto& b = buckets_[next_bucket_];
    b.launched = Clock::now();
    hook_->launch(next_bucket_, b.flat, b.layout);
    ++next_bucket_;
  }
}

void GradientReducer::Impl::launch_remaining() {
  launch_ready_buckets();
  TORCH_INTERNAL_ASSERT(next_bucket_ == buckets_.size());
}

void GradientReducer::Impl::wait_all() {
  amp::autocast full_precision(autocast_off(buckets_.front().flat));
  building_ = ReducerStats{};
  building_.buckets = buckets_.size();
  building_.bucket_spans.reserve(buckets_.size());
  const double world = comm_->size();
  const bool rescale = divisor_ > 0 && divisor_ != world && hook_->averages();
  for (size_t b = 0; b < buckets_.size(); ++b) {
    auto& bucket = buckets_[b];
    hook_->finish(b, bucket.flat, bucket.layout);
    if (rescale) bucket.flat.mul_(world / divisor_);
    building_.bucket_spans.push_back({b, bucket.flat.numel() * bucket.flat.element_size(),
                                      steady_seconds(bucket.launched), steady_seconds(Clock::now())});
  }
  building_.bytes = hook_->take_bytes();
  if (!options_.gradient_as_bucket_view) copy_back_gradients();
}

void GradientReducer::Impl::shadow_launch_all() {
  amp::autocast full_precision(autocast_off(buckets_.front().flat));
  shadow_flats_.clear();
  for (size_t b = 0; b < buckets_.size(); ++b) {
    shadow_flats_.push_back(torch::zeros_like(buckets_[b].flat));
    hook_->launch(b, shadow_flats_.back(), buckets_[b].layout);
  }
}

void GradientReducer::Impl::shadow_wait_all() {
  amp::autocast full_precision(autocast_off(buckets_.front().flat));
  for (size_t b = 0; b < shadow_flats_.size(); ++b) hook_->finish(b, shadow_flats_[b], buckets_[b].layout);
  shadow_flats_.clear();
  hook_->take_bytes();
}

void GradientReducer::Impl::drain() noexcept {
  for (size_t b = 0; b < next_bucket_; ++b) {
    try {
      hook_->finish(b, buckets_[b].flat, buckets_[b].layout);
    } catch (const std::exception&) {
      // The failure that interrupted backward is what the user saw; this one follows from it.
    }
  }
}

void GradientReducer::Impl::unused_everywhere(size_t param, bool created) {
  // Unused everywhere: the gradient is as it was before backward (its average
  // over ranks equals it), or undefined again if it was undefined.
  if (created) params_[param].tensor.mutable_grad() = torch::Tensor();
}

void GradientReducer::Impl::synchronised(const std::vector<size_t>& arrival) {
  const auto& engine_stats = engine_->last_stats();
  building_.backward_s = engine_stats.backward_s;
  building_.exposed_comm_s = engine_stats.exposed_comm_s;
  building_.bytes += engine_stats.agreement_bytes;
  if (options_.rebuild_buckets && !rebuilt_) building_.rebuilt = rebuild_in_arrival_order(arrival);
  stats_ = std::move(building_);
  building_ = ReducerStats{};
}

void GradientReducer::Impl::end_backward(bool) noexcept {
  next_bucket_ = 0;
  for (auto& b : buckets_) b.ready = false;
}

GradientReducer::GradientReducer(std::shared_ptr<torch::nn::Module> module,
                                 std::shared_ptr<comm::Communicator> comm, DdpOptions options)
    : impl_(std::make_unique<Impl>(std::move(module), std::move(comm), options)) {}

GradientReducer::~GradientReducer() = default;

void GradientReducer::pre_forward() { impl_->pre_forward(); }

void GradientReducer::prepare_backward() {
  impl_->check_parameters_unchanged();
  impl_->engine_->begin_forward();
}

void GradientReducer::post_forward(const std::vector<torch::Tensor>& outputs) {
  impl_->engine_->mark_unreachable(outputs);
}

void GradientReducer::set_sync(bool on) { impl_->engine_->set_sync(on); }

bool GradientReducer::sync() const { return impl_->engine_->sync(); }

void GradientReducer::set_comm_hook(std::unique_ptr<CommHook> hook) {
  TORCH_CHECK(hook, "set_comm_hook: the hook is null");
  TORCH_CHECK(!impl_->engine_->in_backward(), "set_comm_hook: called during backward; call it between steps");
  impl_->hook_ = std::move(hook);
}

void GradientReducer::set_static_graph() { impl_->engine_->set_static_graph("_set_static_graph()"); }

void GradientReducer::shadow_backward() { impl_->engine_->shadow_backward(); }

void GradientReducer::set_gradient_divisor(double divisor) {
  TORCH_CHECK(divisor > 0, kComponent, ": the gradient divisor must be > 0, got ", divisor);
  impl_->divisor_ = divisor;
}

void GradientReducer::broadcast(const std::vector<torch::Tensor>& tensors, int root) const {
  grad::detail::broadcast_tensors(*impl_->comm_, tensors, root);
}

const ReducerStats& GradientReducer::last_stats() const { return impl_->stats_; }

std::vector<std::vector<size_t>> GradientReducer::bucket_assignment() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : impl_->buckets_) out.push_back(b.members);
  return out;
}

}  // namespace paisoar::ddp
