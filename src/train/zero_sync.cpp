// ZeroSync: a ZeroOptimizer shards the optimizer state (and the gradients,
// and the parameters, as the placements' data sharding says) over the
// data-parallel ranks, with the optimizer the config names running on this
// rank's shard. With the model's layers, each layer is one unit (a parameter
// several layers use, one of its own): sharded parameters are gathered per
// layer by the GatherRegions runner, and a tied parameter is sharded alike
// on every stage that holds it.
#include <torch/torch.h>

#include <optional>
#include <unordered_set>

#include "paisoar/train/config_schema.h"
#include "paisoar/zero/gather_regions.h"
#include "src/train/grad_sync.h"
#include "src/config/optimizer_factory.h"

namespace paisoar::train {
namespace {

class ZeroSync final : public GradSync {
 public:
  ZeroSync(const SyncPlan& plan, std::shared_ptr<torch::nn::Module> model, const models::LayerSequence& layers,
           const std::vector<std::string>& tied, std::shared_ptr<comm::Communicator> comm)
      : model_(std::move(model)) {
    if (plan.sharding.parameters && !layers) {
      throw ConfigError("zero.stage: 3 gathers the parameters one layer at a time and needs the model's layers "
                        "(TrainTask::layers, a models::LayerSequence; the zoo gives them for every reference "
                        "model); give them, or use zero.stage 2");
    }
    zero::ZeroOptions options = plan.zero;
    options.stage = plan.sharding.stage();
    if (layers) options.units = zero::GatherRegions::units_of(layers, *model_, tied);
    const OptimizerConfig optimizer = plan.optimizer;
    const double lr = plan.lr;
    zero_ = std::make_unique<zero::ZeroOptimizer>(
        model_, std::move(comm),
        [optimizer, lr](const std::vector<zero::ShardParam>& shard) {
          return make_optimizer(optimizer, zero::tensors_of(shard), lr);
        },
        options);
    if (plan.sharding.parameters) gather_.emplace(*zero_, layers, *model_);
  }

  torch::optim::Optimizer& optimizer() override { return *zero_; }
  zero::ZeroOptimizer* zero() override { return zero_.get(); }
  amp::RegionRunner* gathering() override { return gather_ ? &*gather_ : nullptr; }
  std::vector<torch::Tensor> held_gradients(const std::string& name) override {
    std::vector<torch::Tensor> out;
    for (const auto& piece : zero_->shard()) {
      if (piece.name == name) out.push_back(piece.tensor.grad());
    }
    return out;
  }
  void zero_grad() override { zero_->zero_grad(); }
  void set_sync(bool on) override { zero_->set_sync(on); }

  memory::MemoryReport measure_memory(int rank, c10::Device device) const override {
    memory::MemoryReport report = memory::measure_memory(*model_, nullptr, device, rank);
    const zero::MemoryBytes held = zero_->memory();
    report.parameter_bytes = held.params;
    report.gradient_bytes = held.grads;
    report.optimizer_state_bytes = held.optimizer_state;
    return report;
  }

  // Sharded parameters: the full parameters back into the model, and the
  // optimizer dropped (the layers then run plainly again).
  void finish() override {
    if (!gather_) return;
    std::vector<torch::Tensor> full = zero_->full_parameters();
    const auto dtype = zero_->param_dtype();
    gather_.reset();
    zero_.reset();
    torch::NoGradGuard no_grad;
    size_t i = 0;
    for (auto& p : model_->parameters()) {
      if (p.requires_grad()) p.set_data(full.at(i++).to(dtype));
    }
  }

 protected:
  double clip_whole(double max_norm, const optim::ClipGradNormOptions& options) override {
    return zero_->clip_grad_norm_(max_norm, options);
  }
  // Each rank's shard is disjoint from every other rank's: the norm is over the world.
  SplitClip split_clip(const SplitModelNorm& norm) const override {
    std::unordered_set<const void*> skip;
    for (const auto& p : norm.uncounted) skip.insert(p.unsafeGetTensorImpl());
    std::vector<const void*> model_params;
    for (const auto& p : model_->parameters()) {
      if (p.requires_grad()) model_params.push_back(p.unsafeGetTensorImpl());
    }
    SplitClip clip;
    for (const auto& piece : zero_->shard()) {
      (skip.count(model_params.at(piece.param)) ? clip.options.uncounted : clip.counted).push_back(piece.tensor);
    }
    clip.options.comm = norm.world;
    return clip;
  }

 private:
  const std::shared_ptr<torch::nn::Module> model_;
  std::unique_ptr<zero::ZeroOptimizer> zero_;  // null after finish() when parameters are sharded
  std::optional<zero::GatherRegions> gather_;  // parameters sharded: the layers gather them
};

}  // namespace

std::unique_ptr<GradSync> make_zero_sync(const SyncPlan& plan, std::shared_ptr<torch::nn::Module> model,
                                         const models::LayerSequence& layers, const std::vector<std::string>& tied,
                                         std::shared_ptr<comm::Communicator> comm) {
  return std::make_unique<ZeroSync>(plan, std::move(model), layers, tied, std::move(comm));
}

}  // namespace paisoar::train
