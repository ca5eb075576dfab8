// Cutting a stage's Sequential out of a whole model, or building only its layers.
#include "paisoar/pipeline/stage_builder.h"

#include <c10/util/Exception.h>

#include <torch/torch.h>

#include <unordered_set>

#include "src/util/storage_release.h"

namespace paisoar::pipeline {
namespace {

const StagePlan& stage_of(const PartitionPlan& plan, int stage) {
  TORCH_CHECK(stage >= 0 && stage < static_cast<int>(plan.stages.size()), "pipeline: stage ", stage,
              " is not in the plan, which has ", plan.stages.size(), " stages");
  return plan.stages[stage];
}

}  // namespace

torch::nn::Sequential stage_module(const torch::nn::Sequential& model, const PartitionPlan& plan,
                                   int stage) {
  const StagePlan& range = stage_of(plan, stage);
  const int layers = plan.stages.back().end;
  TORCH_CHECK(static_cast<int>(model->size()) == layers, "pipeline: the plan splits ", layers,
              " layers but the model has ", model->size(),
              "; make the plan from this model's layers (profile_layers or one cost per layer)");
  const auto children = model->named_children();
  torch::nn::Sequential out;
  for (int i = range.begin; i < range.end; ++i) out->push_back(children[i].key(), model->begin()[i]);
  return out;
}

models::LayerRange stage_part(const models::LayerSequence& model, const PartitionPlan& plan, int stage) {
  const StagePlan& range = stage_of(plan, stage);
  const int layers = plan.stages.back().end;
  TORCH_CHECK(static_cast<int>(model.size()) == layers, "pipeline: the plan splits ", layers,
              " layers but the model has ", model.size(),
              "; make the plan from this model's layers (profile_layers or one cost per layer)");
  return model.part(static_cast<size_t>(range.begin), static_cast<size_t>(range.end));
}

void release_other_stages(const models::LayerSequence& model, const models::LayerRange& stage) {
  std::unordered_set<const void*> kept;
  for (const auto& p : stage->parameters()) kept.insert(p.storage().unsafeGetStorageImpl());
  for (const auto& b : stage->buffers()) kept.insert(b.storage().unsafeGetStorageImpl());
  torch::NoGradGuard no_grad;
  for (const auto& t : model.model()->parameters()) {
    if (!kept.count(t.storage().unsafeGetStorageImpl())) ::paisoar::detail::release_storage(t);
  }
  for (const auto& t : model.model()->buffers()) {
    if (t.defined() && !kept.count(t.storage().unsafeGetStorageImpl())) ::paisoar::detail::release_storage(t);
  }
}

torch::nn::Sequential build_stage(const LayerFactory& make_layer, const PartitionPlan& plan, int stage) {
  const StagePlan& range = stage_of(plan, stage);
  torch::nn::Sequential out;
  for (int i = range.begin; i < range.end; ++i) {
    torch::nn::AnyModule layer = make_layer(i);
    TORCH_CHECK(!layer.is_empty(), "pipeline: the layer factory returned no module for layer ", i);
    out->push_back(std::to_string(i), std::move(layer));
  }
  return out;
}

}  // namespace paisoar::pipeline
