// ZeroSync: zero.stage 1-3. A ZeroOptimizer shards the optimizer state (and
// gradients, and parameters at stage 3) over the data-parallel ranks, with
// the optimizer the config names running on this rank's shard.
#include <torch/torch.h>

#include <unordered_set>

#include "paisoar/train/config_schema.h"
#include "paisoar/zero/layer_list.h"
#include "src/train/grad_sync.h"
#include "src/train/optimizer_factory.h"

namespace paisoar::train {
namespace {

class ZeroSync final : public GradSync {
 public:
  ZeroSync(const SyncPlan& plan, std::shared_ptr<torch::nn::Module> model, std::shared_ptr<comm::Communicator> comm)
      : model_(std::move(model)) {
    if (plan.zero.stage == 3 && !dynamic_cast<zero::LayerListImpl*>(model_.get())) {
      throw ConfigError("zero.stage: 3 shards the parameters layer by layer and needs the model as a "
                        "zero::LayerList (the zoo builds mlp, fashion_cnn and fashion_cnn_bn as one); this model "
                        "is not, so use zero.stage 2 or wrap its layers in a LayerList");
    }
    const OptimizerConfig optimizer = plan.optimizer;
    const double lr = plan.lr;
    zero_ = std::make_unique<zero::ZeroOptimizer>(
        model_, std::move(comm),
        [optimizer, lr](const std::vector<zero::ShardParam>& shard) {
          return make_optimizer(optimizer, zero::tensors_of(shard), lr);
        },
        plan.zero);
  }

  torch::optim::Optimizer& optimizer() override { return *zero_; }
  zero::ZeroOptimizer* zero() override { return zero_.get(); }
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

  // Stage 3: the full parameters back into the model, and the optimizer
  // dropped (which detaches the LayerList: it runs its layers plainly again).
  void finish() override {
    if (!zero_ || zero_->stage() != 3) return;
    std::vector<torch::Tensor> full = zero_->full_parameters();
    const auto dtype = zero_->param_dtype();
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
  std::unique_ptr<zero::ZeroOptimizer> zero_;  // null after finish() at stage 3
};

}  // namespace

std::unique_ptr<GradSync> make_zero_sync(const SyncPlan& plan, std::shared_ptr<torch::nn::Module> model,
                                         std::shared_ptr<comm::Communicator> comm) {
  return std::make_unique<ZeroSync>(plan, std::move(model), std::move(comm));
}

}  // namespace paisoar::train
