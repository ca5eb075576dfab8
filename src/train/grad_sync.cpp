// GradSync: what both implementations share (clipping over a split model)
// and the choice between them.
#include "src/train/grad_sync.h"

namespace paisoar::train {

double GradSync::clip_grad_norm(double max_norm, double grad_scale) {
  optim::ClipGradNormOptions options = split_ ? split_->options : optim::ClipGradNormOptions{};
  options.grad_scale = grad_scale;
  if (split_) return optim::clip_grad_norm_(split_->counted, max_norm, options);
  return clip_whole(max_norm, options);
}

void GradSync::set_split_model_norm(const SplitModelNorm& norm) { split_ = split_clip(norm); }

std::unique_ptr<GradSync> make_grad_sync(const SyncPlan& plan, std::shared_ptr<torch::nn::Module> model,
                                         const models::LayerSequence& layers, const std::vector<std::string>& tied,
                                         std::shared_ptr<comm::Communicator> comm) {
  if (!plan.sharding.any()) return make_ddp_sync(plan, std::move(model), std::move(comm));
  return make_zero_sync(plan, std::move(model), layers, tied, std::move(comm));
}

}  // namespace paisoar::train
