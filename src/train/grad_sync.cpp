// GradSync: the optimizer factory for ZeRO's shard, and each loop call routed
// to the DDP reducer or the ZeroOptimizer.
#include "src/train/grad_sync.h"

#include <torch/torch.h>

#include <unordered_set>

#include "paisoar/optim/grad_clip.h"
#include "paisoar/train/config_schema.h"
#include "paisoar/zero/layer_list.h"
#include "src/train/optimizer_factory.h"

namespace paisoar::train {

GradSync::GradSync(const TrainConfig& config, std::shared_ptr<torch::nn::Module> model,
                   std::shared_ptr<comm::Communicator> comm, double lr, int ranks_per_node)
    : config_(config), model_(std::move(model)), comm_(std::move(comm)), ranks_per_node_(ranks_per_node) {
  if (config_.zero.stage == 0) {
    optimizer_ = make_optimizer(config_.optimizer, model_->parameters(), lr);
    return;
  }
  if (config_.zero.stage == 3 && !dynamic_cast<zero::LayerListImpl*>(model_.get())) {
    throw ConfigError("zero.stage: 3 shards the parameters layer by layer and needs the model as a "
                      "zero::LayerList (the zoo builds mlp, fashion_cnn and fashion_cnn_bn as one); this model "
                      "is not, so use zero.stage 2 or wrap its layers in a LayerList");
  }
  zero::ZeroOptions o;
  o.stage = static_cast<int>(config_.zero.stage);
  o.bucket_cap_mb = config_.distributed.bucket_cap_mb;
  o.overlap = config_.distributed.overlap;
  o.prefetch = config_.zero.prefetch;
  const OptimizerConfig optimizer_config = config_.optimizer;
  auto z = std::make_unique<zero::ZeroOptimizer>(
      model_, comm_,
      [optimizer_config, lr](const std::vector<zero::ShardParam>& shard) {
        return make_optimizer(optimizer_config, zero::tensors_of(shard), lr);
      },
      o);
  zero_ = z.get();
  optimizer_ = std::move(z);
}

GradSync::~GradSync() = default;

void GradSync::start() {
  if (zero_ || reducer_) return;
  ddp::DdpOptions o;
  o.bucket_cap_mb = config_.distributed.bucket_cap_mb;
  o.overlap = config_.distributed.overlap;
  o.compression.type = ddp::parse_compression(config_.distributed.compression);
  o.ranks_per_node = ranks_per_node_;
  reducer_ = std::make_unique<ddp::GradientReducer>(model_, comm_, o);
}

torch::optim::Optimizer& GradSync::optimizer() { return *optimizer_; }

void GradSync::zero_grad() {
  if (zero_) {
    zero_->zero_grad();
  } else {
    optimizer_->zero_grad();
  }
}

void GradSync::set_sync(bool on) {
  if (zero_) {
    zero_->set_sync(on);
  } else {
    reducer_->set_sync(on);
  }
}

void GradSync::pre_forward() {
  if (reducer_) reducer_->pre_forward();
}

void GradSync::post_forward(const std::vector<torch::Tensor>& outputs) {
  if (reducer_) reducer_->post_forward(outputs);
}

double GradSync::clip_grad_norm(double max_norm, double grad_scale) {
  optim::ClipGradNormOptions options = split_ ? split_->options : optim::ClipGradNormOptions{};
  options.grad_scale = grad_scale;
  if (split_) return optim::clip_grad_norm_(split_->counted, max_norm, options);
  if (zero_) return zero_->clip_grad_norm_(max_norm, options);
  return optim::clip_grad_norm_(model_->parameters(), max_norm, options);
}

void GradSync::set_split_model_norm(const SplitModelNorm& norm) {
  std::unordered_set<const void*> skip;
  for (const auto& p : norm.uncounted) skip.insert(p.unsafeGetTensorImpl());
  SplitClip clip;
  if (zero_) {
    // Each rank's shard is disjoint from every other rank's: the norm is over the world.
    std::vector<const void*> model_params;
    for (const auto& p : model_->parameters()) {
      if (p.requires_grad()) model_params.push_back(p.unsafeGetTensorImpl());
    }
    for (const auto& piece : zero_->shard()) {
      (skip.count(model_params.at(piece.param)) ? clip.options.uncounted : clip.counted).push_back(piece.tensor);
    }
    clip.options.comm = norm.world;
  } else {
    // Every data-parallel replica holds the same averaged gradients: the norm is over one replica.
    for (const auto& p : model_->parameters()) {
      (skip.count(p.unsafeGetTensorImpl()) ? clip.options.uncounted : clip.counted).push_back(p);
    }
    clip.options.comm = norm.model_group;
  }
  split_ = std::move(clip);
}

const ddp::ReducerStats& GradSync::last_stats() const { return reducer_ ? reducer_->last_stats() : no_stats_; }

memory::MemoryReport GradSync::measure_memory(int rank, c10::Device device) const {
  if (!zero_) return memory::measure_memory(*model_, optimizer_.get(), device, rank);
  memory::MemoryReport report = memory::measure_memory(*model_, nullptr, device, rank);
  const zero::MemoryBytes held = zero_->memory();
  report.parameter_bytes = held.params;
  report.gradient_bytes = held.grads;
  report.optimizer_state_bytes = held.optimizer_state;
  return report;
}

void GradSync::finish() {
  if (!zero_ || zero_->stage() != 3) return;
  std::vector<torch::Tensor> full = zero_->full_parameters();
  const auto dtype = zero_->param_dtype();
  zero_ = nullptr;
  optimizer_.reset();  // detaches the LayerList: it runs its layers plainly again
  torch::NoGradGuard no_grad;
  size_t i = 0;
  for (auto& p : model_->parameters()) {
    if (p.requires_grad()) p.set_data(full.at(i++).to(dtype));
  }
}

}  // namespace paisoar::train
