// plan_pipeline: a sample micro-batch from the training set, profile_layers,
// partition_layers, broadcast_plan.
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
                      "(the zoo does for mlp, fashion_cnn and fashion_cnn_bn)");
  }
  const auto layers = static_cast<int64_t>(task.layers->size());
  if (layers < stages) {
    throw ConfigError("parallel.pipeline: " + std::to_string(stages) + " stages but the model has " +
                      std::to_string(layers) + " layers; use at most " + std::to_string(layers) + " stages");
  }
  std::vector<torch::Tensor> samples;
  const int64_t n = std::min<int64_t>(rows, task.train_data->size());
  for (int64_t i = 0; i < n; ++i) {
    data::SampleRng rng(static_cast<uint64_t>(config.seed), 0, static_cast<uint64_t>(i));
    samples.push_back(task.train_data->get(i, rng).data.to(torch::kFloat));
  }
  pipeline::ProfileOptions options;
  // 1F1B's first stage holds P micro-batches at once, GPipe's every stage M.
  options.activation_copies = static_cast<int>(
      config.parallel.schedule == "gpipe" ? config.parallel.micro_batches
                                          : std::min(stages, config.parallel.micro_batches));
  const auto costs = pipeline::profile_layers(task.layers, torch::stack(samples).to(device), options);
  pipeline::PartitionPlan plan;
  if (world.rank() == 0) plan = pipeline::partition_layers(costs, static_cast<int>(stages));
  return pipeline::broadcast_plan(plan, world, 0);
}

}  // namespace paisoar::train
