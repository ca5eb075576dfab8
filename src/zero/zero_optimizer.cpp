// ZeroOptimizer: checking and syncing the model, the flat unit buffers, this
// rank's shard and the inner optimizer over it; step() and the all-gather of
// the updated shards (stages 1-2); memory accounting.
#include "paisoar/zero/zero_optimizer.h"

#include <torch/torch.h>

#include <algorithm>
#include <iostream>

#include "paisoar/comm/communicator.h"
#include "paisoar/zero/layer_list.h"
#include "src/grad/bucket_plan.h"
#include "src/grad/model_sync.h"
#include "src/util/storage_alias.h"
#include "src/zero/zero_impl.h"

namespace paisoar::zero {

std::vector<torch::Tensor> tensors_of(const std::vector<ShardParam>& shard) {
  std::vector<torch::Tensor> out;
  for (const auto& s : shard) out.push_back(s.tensor);
  return out;
}

ZeroOptimizer::Impl::Impl(ZeroOptimizer& owner, std::shared_ptr<torch::nn::Module> model,
                          std::shared_ptr<comm::Communicator> comm, OptimizerFactory factory,
                          ZeroOptions options)
    : owner_(owner), model_(std::move(model)), comm_(std::move(comm)), options_(options) {
  TORCH_CHECK(model_, "ZeroOptimizer needs a model");
  TORCH_CHECK(comm_, "ZeroOptimizer needs a Communicator (Communicator::from_env() under paisoar launch)");
  TORCH_CHECK(factory, "ZeroOptimizer needs an optimizer factory");
  TORCH_CHECK(options_.stage >= 1 && options_.stage <= 3, "ZeroOptions::stage must be 1, 2 or 3, got ",
              options_.stage, " (stage 0 is plain DDP: use DistributedDataParallel)");
  TORCH_CHECK(options_.bucket_cap_mb > 0 && options_.first_bucket_mb > 0,
              "ZeroOptions::bucket_cap_mb and first_bucket_mb must be > 0 MiB");
  TORCH_CHECK_VALUE(options_.reduce_dtype == torch::ScalarType::Undefined ||
                        at::isFloatingType(options_.reduce_dtype),
                    "ZeroOptions::reduce_dtype must be a floating dtype (Half, BFloat16) or Undefined, got ",
                    options_.reduce_dtype);
  rank_ = comm_->rank();
  world_ = comm_->size();
  std::vector<std::pair<std::string, torch::Tensor>> named, buffers;
  for (const auto& p : model_->named_parameters()) {
    if (p.value().requires_grad()) named.emplace_back(p.key(), p.value());
  }
  for (const auto& b : model_->named_buffers()) buffers.emplace_back(b.key(), b.value());
  TORCH_CHECK(!named.empty(), "ZeroOptimizer: the model has no parameter that requires grad");
  dtype_ = named[0].second.scalar_type();
  for (const auto& [name, t] : named) {
    TORCH_CHECK(t.scalar_type() == dtype_ && t.device() == named[0].second.device(),
                "ZeroOptimizer: parameter '", name, "' is ", t.scalar_type(), " on ", t.device(),
                " but '", named[0].first, "' is ", dtype_, " on ", named[0].second.device(),
                "; ZeRO shards one dtype and device: convert the whole model (model->to(...)) first");
    TORCH_CHECK(at::isFloatingType(t.scalar_type()), "ZeroOptimizer: parameter '", name,
                "' is not floating point");
  }
  grad::detail::check_same_tensors(*comm_, "ZeroOptimizer", "parameter", named);
  grad::detail::check_same_tensors(*comm_, "ZeroOptimizer", "buffer", buffers);
  std::vector<torch::Tensor> all;
  for (const auto& [name, t] : named) {
    params_.push_back({t, name});
    names_.push_back(name);
    shapes_.push_back(t.sizes().vec());
    all.push_back(t);
  }
  for (const auto& [name, t] : buffers) all.push_back(t);
  grad::detail::broadcast_tensors(*comm_, all, /*root=*/0);

  std::vector<int64_t> numels;
  for (const auto& p : params_) numels.push_back(p.tensor.numel());
  layout_ = std::make_unique<ShardLayout>(numels, plan_units(), world_);
  for (size_t u = 0; u < layout_->units().size(); ++u) order_.push_back(u);
  if (options_.stage == 3 || !options_.units.empty()) {
    std::reverse(order_.begin(), order_.end());  // units in forward order: backward finishes them last to first
  }
  build_units();
  build_shard(factory);
  start_engine();
  if (auto* layers = dynamic_cast<LayerListImpl*>(model_.get()); layers && options_.stage == 3) {
    layers->attach(this);
  }
  if (world_ == 1 && options_.warn_single_rank) {
    std::cerr << "paisoar: ZeRO stage " << options_.stage
              << " on 1 rank: nothing is sharded, so it saves no memory (it trains like the plain "
                 "optimizer)" << std::endl;
  }
}

std::vector<std::vector<size_t>> ZeroOptimizer::Impl::plan_units() const {
  if (!options_.units.empty()) return units_named();
  if (options_.stage == 3) {
    auto* layers = dynamic_cast<LayerListImpl*>(model_.get());
    TORCH_CHECK(layers, "ZeRO stage 3 needs its units (each gathered around its forward and backward): "
                "ZeroOptions::units (GatherRegions::units_of for a model described as layers, a "
                "models::LayerSequence) or the model as a paisoar::zero::LayerList; or use stage 2");
    // Each layer's parameters, matched to the model's by identity.
    std::vector<std::vector<size_t>> units;
    std::vector<char> taken(params_.size(), 0);
    for (size_t l = 0; l < layers->size(); ++l) {
      std::vector<size_t> unit;
      for (const auto& t : layers->layer_parameters(l)) {
        for (size_t i = 0; i < params_.size(); ++i) {
          if (!taken[i] && params_[i].tensor.is_same(t)) {
            unit.push_back(i);
            taken[i] = 1;
          }
        }
      }
      units.push_back(unit);
    }
    return units;
  }
  std::vector<torch::Tensor> tensors;
  std::vector<size_t> order;
  for (size_t i = 0; i < params_.size(); ++i) {
    tensors.push_back(params_[i].tensor);
    order.push_back(params_.size() - 1 - i);  // gradients of the last layers come first
  }
  return grad::detail::plan_buckets(tensors, order,
                                   static_cast<int64_t>(options_.first_bucket_mb * 1024 * 1024),
                                   static_cast<int64_t>(options_.bucket_cap_mb * 1024 * 1024));
}

std::vector<std::vector<size_t>> ZeroOptimizer::Impl::units_named() const {
  std::vector<std::vector<size_t>> units;
  std::vector<int> unit_of(params_.size(), -1);
  for (const auto& names : options_.units) {
    std::vector<size_t> unit;
    for (const auto& name : names) {
      auto it = std::find(names_.begin(), names_.end(), name);
      TORCH_CHECK_VALUE(it != names_.end(), "ZeroOptions::units names '", name,
                        "', which is not a trainable parameter of the model");
      const auto i = static_cast<size_t>(it - names_.begin());
      TORCH_CHECK_VALUE(unit_of[i] < 0, "ZeroOptions::units: parameter '", name, "' is in units ",
                        unit_of[i], " and ", units.size(), "; put each parameter in one unit");
      unit_of[i] = static_cast<int>(units.size());
      unit.push_back(i);
    }
    units.push_back(std::move(unit));
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    TORCH_CHECK_VALUE(unit_of[i] >= 0, "ZeroOptions::units: parameter '", names_[i],
                      "' is in no unit; every trainable parameter must be in one");
  }
  return units;
}

bool ZeroOptimizer::Impl::master_aliases_full() const {
  return dtype_ == torch::kFloat && options_.stage < 3;
}

bool ZeroOptimizer::Impl::chunk_aliases_grad() const {
  return dtype_ == torch::kFloat && options_.stage == 1;
}

torch::Tensor ZeroOptimizer::Impl::own_chunk(const torch::Tensor& full) const {
  const int64_t chunk = full.numel() / world_;
  return full.narrow(0, rank_ * chunk, chunk);
}

void ZeroOptimizer::Impl::build_units() {
  torch::NoGradGuard no_grad;
  const auto fp32 = torch::TensorOptions(torch::kFloat).device(params_[0].tensor.device());
  for (const auto& ul : layout_->units()) {
    Unit unit;
    unit.full = torch::zeros({ul.padded}, params_[0].tensor.options().requires_grad(false));
    for (size_t k = 0; k < ul.params.size(); ++k) {
      auto& p = params_[ul.params[k]];
      unit.full.narrow(0, ul.offsets[k], p.tensor.numel()).copy_(p.tensor.reshape({-1}));
      p.tensor.set_data(::paisoar::detail::storage_alias(unit.full, ul.offsets[k], p.tensor.sizes()));
    }
    if (options_.stage == 1) {
      unit.full_grad = torch::zeros({ul.padded}, unit.full.options());
      for (size_t k = 0; k < ul.params.size(); ++k) {
        auto& p = params_[ul.params[k]];
        if (p.tensor.grad().defined()) {
          unit.full_grad.narrow(0, ul.offsets[k], p.tensor.numel()).copy_(p.tensor.grad().reshape({-1}));
        }
        p.tensor.mutable_grad() = ::paisoar::detail::storage_alias(unit.full_grad, ul.offsets[k], p.tensor.sizes());
      }
    } else {
      for (size_t k = 0; k < ul.params.size(); ++k) params_[ul.params[k]].tensor.mutable_grad() = torch::Tensor();
    }
    unit.master = master_aliases_full() ? own_chunk(unit.full) : own_chunk(unit.full).to(fp32, false, true);
    unit.grad_chunk = chunk_aliases_grad() ? own_chunk(unit.full_grad) : torch::zeros({ul.chunk}, fp32);
    unit.gathered = true;
    units_.push_back(std::move(unit));
  }
  if (options_.stage == 3) {
    for (size_t u = 0; u < units_.size(); ++u) free_params(u);
  }
}

void ZeroOptimizer::Impl::build_shard(const OptimizerFactory& factory) {
  for (const Piece& piece : layout_->pieces(rank_)) {
    const Unit& unit = units_[piece.unit];
    ShardParam s;
    s.tensor = ::paisoar::detail::storage_alias(unit.master, piece.chunk_begin, {piece.numel});
    s.tensor.mutable_grad() = ::paisoar::detail::storage_alias(unit.grad_chunk, piece.chunk_begin, {piece.numel});
    s.name = names_[piece.param];
    s.param = piece.param;
    s.param_begin = piece.param_begin;
    shard_.push_back(std::move(s));
  }
  inner_ = factory(shard_);
  TORCH_CHECK(inner_, "ZeroOptimizer: the optimizer factory returned null");
  // The inner optimizer's defaults: LibTorch 2.x's add_param_group merges a
  // group's options with them (cloning them, which the base class cannot).
  owner_.defaults_ = inner_->defaults().clone();
  size_t count = 0;
  for (const auto& g : inner_->param_groups()) {
    for (const auto& p : g.params()) {
      bool ours = false;
      for (const auto& s : shard_) ours = ours || s.tensor.is_same(p);
      TORCH_CHECK(ours, "ZeroOptimizer: the optimizer factory must build the optimizer over the shard "
                  "tensors it is given (tensors_of(shard)), not over the model's parameters");
      ++count;
    }
    owner_.add_param_group(torch::optim::OptimizerParamGroup(g.params(), g.options().clone()));
  }
  TORCH_CHECK(count == shard_.size(), "ZeroOptimizer: the optimizer covers ", count, " of the ",
              shard_.size(), " shard tensors it was given; give it all of them");
}

void ZeroOptimizer::Impl::publish() {
  torch::NoGradGuard no_grad;
  if (options_.stage == 3) {
    // The next forward gathers from the master shard; a unit still gathered
    // (only between a forward and its backward) is refreshed now.
    for (size_t u = 0; u < units_.size(); ++u) {
      if (units_[u].gathered) {
        free_params(u);
        gather_async(u);
        wait_gathered(u);
      }
    }
    return;
  }
  std::vector<comm::Work> works;
  for (auto& unit : units_) {
    torch::Tensor mine = own_chunk(unit.full);
    if (!master_aliases_full()) mine.copy_(unit.master);
    works.push_back(comm_->allgather_into(unit.full, mine));
  }
  for (auto& w : works) w.wait();
}

ZeroOptimizer::Impl::~Impl() {
  if (options_.stage == 3) {
    if (auto* layers = dynamic_cast<LayerListImpl*>(model_.get())) layers->attach(nullptr);
  }
}

// ---------------------------------------------------------------- ZeroOptimizer

ZeroOptimizer::ZeroOptimizer(std::shared_ptr<torch::nn::Module> model,
                             std::shared_ptr<comm::Communicator> comm, OptimizerFactory factory,
                             ZeroOptions options)
    : Optimizer(std::vector<torch::optim::OptimizerParamGroup>{},
                std::make_unique<torch::optim::OptimizerOptions>()) {
  impl_ = std::make_unique<Impl>(*this, std::move(model), std::move(comm), std::move(factory), options);
}

ZeroOptimizer::~ZeroOptimizer() = default;

torch::Tensor ZeroOptimizer::step(LossClosure closure) {
  torch::Tensor loss;
  if (closure) loss = closure();
  auto& inner = *impl_->inner_;
  for (const auto& s : impl_->shard_) {
    TORCH_CHECK(s.tensor.grad().defined(), "ZeroOptimizer::step: the shard's gradient of '", s.name,
                "' was set to None (torch::optim::Optimizer::zero_grad, called through a base-class reference, "
                "is not ZeroOptimizer's); call ZeroOptimizer::zero_grad() on the ZeroOptimizer itself");
  }
  // LR schedules and users change this optimizer's groups; the inner one follows.
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    inner.param_groups()[g].set_options(param_groups_[g].options().clone());
  }
  inner.step();
  impl_->publish();
  return loss;
}

void ZeroOptimizer::zero_grad() {
  impl_->engine_->begin_forward();  // forgets a backward an exception interrupted
  torch::NoGradGuard no_grad;
  for (auto& unit : impl_->units_) {
    if (unit.full_grad.defined()) unit.full_grad.zero_();
    unit.grad_chunk.zero_();
  }
  if (impl_->options_.stage >= 2) impl_->release_full_grads();
}

void ZeroOptimizer::unit_forward_begin(size_t k) { impl_->unit_forward_begin(k); }
void ZeroOptimizer::unit_forward_end(size_t k) { impl_->unit_forward_end(k); }
void ZeroOptimizer::unit_backward_begin(size_t k) { impl_->on_pre_backward(k); }
torch::Tensor ZeroOptimizer::run_in_units(const std::vector<size_t>& units, const torch::Tensor& x,
                                          const std::function<torch::Tensor(const torch::Tensor&)>& fn) {
  return impl_->run_in_units(units, x, fn);
}

void ZeroOptimizer::set_sync(bool on) { impl_->engine_->set_sync(on); }

bool ZeroOptimizer::sync() const { return impl_->engine_->sync(); }

double ZeroOptimizer::clip_grad_norm_(double max_norm, optim::ClipGradNormOptions options) {
  options.comm = impl_->comm_;
  return optim::clip_grad_norm_(tensors_of(impl_->shard_), max_norm, options);
}

MemoryBytes ZeroOptimizer::memory() const {
  std::vector<torch::Tensor> params, grads;
  for (const auto& unit : impl_->units_) {
    params.push_back(unit.full);
    params.push_back(unit.master);
    grads.push_back(unit.full_grad);
    grads.push_back(unit.grad_chunk);
    grads.push_back(unit.reduced);
  }
  MemoryBytes m;
  m.params = storage_bytes(params);
  m.grads = storage_bytes(grads);
  m.optimizer_state = optimizer_state_bytes(*impl_->inner_);
  return m;
}

int ZeroOptimizer::stage() const { return impl_->options_.stage; }
const ShardLayout& ZeroOptimizer::layout() const { return *impl_->layout_; }
const std::vector<ShardParam>& ZeroOptimizer::shard() const { return impl_->shard_; }
const std::vector<std::string>& ZeroOptimizer::param_names() const { return impl_->names_; }
const std::vector<std::vector<int64_t>>& ZeroOptimizer::param_shapes() const { return impl_->shapes_; }
std::vector<std::pair<std::string, torch::Tensor>> ZeroOptimizer::named_buffers() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& b : impl_->model_->named_buffers()) out.emplace_back(b.key(), b.value());
  return out;
}
torch::ScalarType ZeroOptimizer::param_dtype() const { return impl_->dtype_; }
torch::optim::Optimizer& ZeroOptimizer::inner() { return *impl_->inner_; }
const torch::optim::Optimizer& ZeroOptimizer::inner() const { return *impl_->inner_; }
std::shared_ptr<comm::Communicator> ZeroOptimizer::comm() const { return impl_->comm_; }
void ZeroOptimizer::publish() { impl_->publish(); }

std::vector<torch::Tensor> ZeroOptimizer::full_parameters() {
  torch::NoGradGuard no_grad;
  auto& im = *impl_;
  std::vector<torch::Tensor> out(im.params_.size());
  for (size_t u = 0; u < im.units_.size(); ++u) {
    const auto& ul = im.layout_->units()[u];
    torch::Tensor full = torch::empty({ul.padded}, im.units_[u].master.options());
    im.comm_->allgather_into(full, im.units_[u].master).wait();
    for (size_t k = 0; k < ul.params.size(); ++k) {
      const size_t i = ul.params[k];
      out[i] = full.narrow(0, ul.offsets[k], im.layout_->numels()[i]).reshape(im.shapes_[i]).clone();
    }
  }
  return out;
}

}  // namespace paisoar::zero
