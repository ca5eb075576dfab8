// plan_pipeline: a sample micro-batch from the training set, profile_layers,
// partition_layers, broadcast_plan; choose_plan: that or a checkpoint's bounds.
#include "src/train/stage_plan.h"

#include <torch/torch.h>

#include "paisoar/pipeline/layer_cost.h"
#include "paisoar/pipeline/plan_broadcast.h"

namespace paisoar::train {

pipeline::PartitionPlan plan_pipeline(const TrainTask& task, const TrainConfig& config, int64_t rows,
                                      torch::Device device, comm::Communicator& world) {
  const int64_t stages = config.parallel.pipeline;
  if (!task.layers) {
    throw ConfigError("parallel.pipeline: the task has no layers to split into stages; set TrainTask::layers "
                      "(the zoo does for every reference model)");
  }
  const auto layers = static_cast<int64_t>(task.layers.size());
  if (layers < stages) {
    throw ConfigError("parallel.pipeline: " + std::to_string(stages) + " stages but the model has " +
                      std::to_string(layers) + " layers; use at most " + std::to_string(layers) + " stages");
  }
  std::vector<torch::Tensor> samples;
  const int64_t n = std::min<int64_t>(rows, task.train_data->size());
  for (int64_t i = 0; i < n; ++i) {
    data::SampleRng rng(static_cast<uint64_t>(config.seed), 0, static_cast<uint64_t>(i));
    torch::Tensor x = task.train_data->get(i, rng).data;
    if (x.scalar_type() == torch::kByte) x = x.to(torch::kFloat);  // images left for the device to normalise
    samples.push_back(x);
  }
  pipeline::ProfileOptions options;
  // 1F1B's first stage holds P micro-batches at once, GPipe's every stage M.
  options.activation_copies = static_cast<int>(
      config.parallel.schedule == pipeline::Schedule::GPipe ? config.parallel.micro_batches
                                          : std::min(stages, config.parallel.micro_batches));
  const auto costs = pipeline::profile_layers(task.layers, torch::stack(samples).to(device), options);
  pipeline::PartitionPlan plan;
  if (world.rank() == 0) plan = pipeline::partition_layers(costs, static_cast<int>(stages));
  return pipeline::broadcast_plan(plan, world, 0);
}

pipeline::PartitionPlan choose_plan(const TrainTask& task, const TrainConfig& config, int64_t rows,
                                    torch::Device device, comm::Communicator& world,
                                    const std::optional<std::vector<int>>& checkpoint_bounds, std::string* description) {
  const bool lead = world.rank() == 0;
  if (checkpoint_bounds && static_cast<int64_t>(checkpoint_bounds->size()) == config.parallel.pipeline + 1 &&
      task.layers) {
    auto plan = pipeline::plan_from_bounds(std::vector<pipeline::LayerCost>(task.layers.size()), *checkpoint_bounds);
    if (lead) *description = "pipeline plan: stage bounds " + bounds_text(plan) + ", as in the checkpoint resumed from";
    return plan;
  }
  auto plan = plan_pipeline(task, config, rows, device, world);
  if (lead) *description = plan.to_string();
  return plan;
}

std::string bounds_text(const pipeline::PartitionPlan& plan) {
  std::string text;
  for (const auto& stage : plan.stages) text += std::to_string(stage.begin) + ",";
  return text + (plan.stages.empty() ? "0" : std::to_string(plan.stages.back().end));
}

}  // namespace paisoar::train
