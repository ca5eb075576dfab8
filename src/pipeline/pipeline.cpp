// Pipeline construction: the stage's slice and op list, and the collective
// check that every rank runs the same schedule, micro-batch count and a
// contiguous share of the layers (a mismatch would otherwise hang in recv).
#include "paisoar/pipeline/pipeline.h"

#include <c10/util/Exception.h>

#include <sstream>

#include "paisoar/pipeline/stage_builder.h"
#include "src/pipeline/link_shapes.h"
#include "src/pipeline/stage_text.h"

namespace paisoar::pipeline {
namespace {

// This rank's stage of `plan`, after checking the plan fits the group.
const StagePlan& stage_range(const PartitionPlan& plan, const std::shared_ptr<comm::Communicator>& group) {
  TORCH_CHECK(group, "pipeline: the group is null (is this rank a member?)");
  TORCH_CHECK(static_cast<int>(plan.stages.size()) == group->size(), "pipeline: the plan has ",
              plan.stages.size(), " stages but the pipeline group '", group->name(), "' has ",
              group->size(), " ranks; partition into group->size() stages");
  return plan.stages[group->rank()];
}

// Every layer of a stage given already cut (an empty one is refused by the constructor).
models::LayerRange whole_part(const torch::nn::Sequential& stage) {
  if (!stage || stage->is_empty()) return models::LayerRange(std::vector<models::Layer>{});
  const auto layers = models::LayerSequence::of_sequential(stage);
  return layers.part(0, layers.size());
}

}  // namespace

Pipeline::Pipeline(const models::LayerSequence& model, const PartitionPlan& plan,
                   std::shared_ptr<comm::Communicator> group, LossFn loss_fn, PipelineOptions options)
    : Pipeline(stage_part(model, plan, (stage_range(plan, group), group->rank())),
               stage_range(plan, group).begin, stage_range(plan, group).end, group,
               std::move(loss_fn), options) {}

Pipeline::Pipeline(const torch::nn::Sequential& model, const PartitionPlan& plan,
                   std::shared_ptr<comm::Communicator> group, LossFn loss_fn, PipelineOptions options)
    : Pipeline(models::LayerSequence::of_sequential(model), plan, std::move(group), std::move(loss_fn), options) {}

Pipeline::Pipeline(torch::nn::Sequential stage, std::shared_ptr<comm::Communicator> group,
                   LossFn loss_fn, PipelineOptions options)
    : Pipeline(whole_part(stage), -1, -1, std::move(group), std::move(loss_fn), options) {}

Pipeline::Pipeline(models::LayerRange stage, int first_layer, int end_layer,
                   std::shared_ptr<comm::Communicator> group, LossFn loss_fn, PipelineOptions options)
    : module_(std::move(stage)), group_(std::move(group)), loss_fn_(std::move(loss_fn)),
      options_(options) {
  TORCH_CHECK(group_, "pipeline: the group is null (is this rank a member?)");
  TORCH_CHECK(module_ && !module_->layers().empty(), "pipeline: stage ", group_->rank(),
              " has no layers; every stage needs at least one");
  TORCH_CHECK(options_.micro_batches >= 1, "pipeline: micro_batches must be at least 1, got ",
              options_.micro_batches);
  stage_ = group_->rank();
  stages_ = group_->size();
  TORCH_CHECK(stage_ != stages_ - 1 || loss_fn_, "pipeline: the last stage (rank ", stage_,
              ") needs a loss function");
  std::ostringstream d;
  d << "stage " << stage_ << " of " << stages_ << " (rank " << stage_ << " of group '"
    << group_->name() << "'";
  if (first_layer >= 0) d << ", layers " << first_layer << "-" << end_layer - 1;
  d << ")";
  description_ = d.str();
  ops_ = make_schedule(options_.schedule, stages_, stage_, options_.micro_batches);
  check_agreement(first_layer, end_layer);
}

void Pipeline::check_agreement(int first_layer, int end_layer) {
  links_ = std::make_shared<detail::StageLinks>();
  if (stages_ == 1) return;
  constexpr int kFields = 5;
  const bool on_cpu = detail::stage_device(*module_).is_cpu();
  torch::Tensor mine = torch::tensor({static_cast<int64_t>(options_.micro_batches),
                                      static_cast<int64_t>(options_.schedule),
                                      static_cast<int64_t>(first_layer), static_cast<int64_t>(end_layer),
                                      static_cast<int64_t>(on_cpu)});
  // allgather (c10d's own tags), not allgather_into (pairwise tags): see step_outcome.cpp.
  torch::Tensor all = torch::empty({stages_, kFields}, torch::kInt64);
  std::vector<torch::Tensor> rows;
  for (int r = 0; r < stages_; ++r) rows.push_back(all[r]);
  group_->allgather(rows, mine).wait();
  const auto* a = all.data_ptr<int64_t>();
  auto field = [&](int rank, int f) { return a[rank * kFields + f]; };
  std::ostringstream problems;
  for (int r = 1; r < stages_; ++r) {
    if (field(r, 0) != field(0, 0) || field(r, 1) != field(0, 1)) {
      problems << "\n  rank " << r << " uses micro_batches=" << field(r, 0) << " schedule="
               << to_string(static_cast<Schedule>(field(r, 1))) << " but rank 0 uses micro_batches="
               << field(0, 0) << " schedule=" << to_string(static_cast<Schedule>(field(0, 1)));
    }
  }
  bool ranges_known = true;
  for (int r = 0; r < stages_; ++r) ranges_known = ranges_known && field(r, 2) >= 0;
  if (ranges_known) {
    if (field(0, 2) != 0) problems << "\n  stage 0 starts at layer " << field(0, 2) << ", not 0";
    for (int r = 0; r + 1 < stages_; ++r) {
      if (field(r, 3) != field(r + 1, 2)) {
        problems << "\n  stage " << r << " ends before layer " << field(r, 3) << " but stage "
                 << r + 1 << " starts at layer " << field(r + 1, 2);
      }
    }
  }
  // A link posts payloads ahead only when both its ends are on the CPU (Gloo).
  // NCCL runs a pair's sends and receives in the order they were issued, and a
  // receive posted ahead could hold up a send the neighbour is waiting for.
  const bool prev_cpu = stage_ > 0 && on_cpu && field(stage_ - 1, 4) != 0;
  const bool next_cpu = stage_ + 1 < stages_ && on_cpu && field(stage_ + 1, 4) != 0;
  links_->activations_in = links_->gradients_out = detail::LinkShapes(prev_cpu);
  links_->activations_out = links_->gradients_in = detail::LinkShapes(next_cpu);
  const std::string text = problems.str();
  TORCH_CHECK(text.empty(), "pipeline: the ranks of group '", group_->name(),
              "' disagree on the pipeline; build every stage from the same plan and options:", text);
}

}  // namespace paisoar::pipeline
