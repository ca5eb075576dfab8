// The Trainer's pipeline split: task.layers profiled on a micro-batch of
// training samples and cut into parallel.pipeline stages by the exact
// partitioner, one plan for every rank; or, on a resume, the checkpoint's cut.
#pragma once

#include <torch/types.h>

#include <optional>
#include <string>
#include <vector>

#include "paisoar/comm/communicator.h"
#include "paisoar/pipeline/partition.h"
#include "paisoar/train/trainer.h"

namespace paisoar::train {

// Collective over `world`: every rank profiles (tensor-parallel layers pair
// their collectives), rank 0's plan is broadcast. `rows`: one micro-batch.
// Throws ConfigError when the task has no layers or fewer layers than stages.
pipeline::PartitionPlan plan_pipeline(const TrainTask& task, const TrainConfig& config, int64_t rows,
                                      torch::Device device, comm::Communicator& world);

// The plan this run uses: the stage bounds of the checkpoint it resumes
// (`checkpoint_bounds`, when they fit parallel.pipeline stages), else
// plan_pipeline's (collective then). On rank 0, *description gets the text to print.
pipeline::PartitionPlan choose_plan(const TrainTask& task, const TrainConfig& config, int64_t rows,
                                    torch::Device device, comm::Communicator& world,
                                    const std::optional<std::vector<int>>& checkpoint_bounds, std::string* description);

// A plan's stage bounds as "0,2,3": each stage's first layer, then the end.
std::string bounds_text(const pipeline::PartitionPlan& plan);

}  // namespace paisoar::train
