// DdpSync: nothing sharded over the data ranks. The optimizer the config
// names runs on the whole model (part) on every rank; DDP's GradientReducer
// averages the gradients in buckets during backward.
#include <torch/torch.h>

#include <unordered_set>

#include "src/train/grad_sync.h"
#include "src/config/optimizer_factory.h"

namespace paisoar::train {
namespace {

class DdpSync final : public GradSync {
 public:
  DdpSync(const SyncPlan& plan, std::shared_ptr<torch::nn::Module> model, std::shared_ptr<comm::Communicator> comm)
      : options_(plan.ddp),
        model_(std::move(model)),
        comm_(std::move(comm)),
        optimizer_(make_optimizer(plan.optimizer, model_->parameters(), plan.lr)) {}

  void start() override {
    if (!reducer_) reducer_ = std::make_unique<ddp::GradientReducer>(model_, comm_, options_);
  }
  torch::optim::Optimizer& optimizer() override { return *optimizer_; }
  std::vector<torch::Tensor> held_gradients(const std::string& name) override {
    const auto* p = model_->named_parameters().find(name);
    TORCH_CHECK(p != nullptr, "DdpSync: the model has no parameter '", name, "'");
    return {p->grad()};
  }
  void zero_grad() override { optimizer_->zero_grad(); }
  void set_sync(bool on) override { reducer_->set_sync(on); }
  void pre_forward() override { reducer_->pre_forward(); }
  void prepare_backward() override { reducer_->prepare_backward(); }
  void post_forward(const std::vector<torch::Tensor>& outputs) override { reducer_->post_forward(outputs); }
  const ddp::ReducerStats& last_stats() const override {
    return reducer_ ? reducer_->last_stats() : GradSync::last_stats();
  }
  memory::MemoryReport measure_memory(int rank, c10::Device device) const override {
    return memory::measure_memory(*model_, optimizer_.get(), device, rank);
  }

 protected:
  double clip_whole(double max_norm, const optim::ClipGradNormOptions& options) override {
    return optim::clip_grad_norm_(model_->parameters(), max_norm, options);
  }
  // Every data-parallel replica holds the same averaged gradients: the norm
  // is over one replica's parts.
  SplitClip split_clip(const SplitModelNorm& norm) const override {
    std::unordered_set<const void*> skip;
    for (const auto& p : norm.uncounted) skip.insert(p.unsafeGetTensorImpl());
    SplitClip clip;
    for (const auto& p : model_->parameters()) {
      (skip.count(p.unsafeGetTensorImpl()) ? clip.options.uncounted : clip.counted).push_back(p);
    }
    clip.options.comm = norm.model_group;
    return clip;
  }

 private:
  const ddp::DdpOptions options_;
  const std::shared_ptr<torch::nn::Module> model_;
  const std::shared_ptr<comm::Communicator> comm_;
  const std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<ddp::GradientReducer> reducer_;  // from start()
};

}  // namespace

std::unique_ptr<GradSync> make_ddp_sync(const SyncPlan& plan, std::shared_ptr<torch::nn::Module> model,
                                        std::shared_ptr<comm::Communicator> comm) {
  return std::make_unique<DdpSync>(plan, std::move(model), std::move(comm));
}

}  // namespace paisoar::train
