// The Trainer's pipeline split: task.layers profiled on a micro-batch of
// training samples and cut into parallel.pipeline stages by the exact
// partitioner, one plan for every rank.
#pragma once

#include <torch/types.h>

#include "paisoar/comm/communicator.h"
#include "paisoar/pipeline/partition.h"
#include "paisoar/train/trainer.h"

namespace paisoar::train {

// Collective over `world`: every rank profiles (tensor-parallel layers pair
// their collectives), rank 0's plan is broadcast. `rows`: one micro-batch.
// Throws ConfigError when the task has no layers or fewer layers than stages.
pipeline::PartitionPlan plan_pipeline(const TrainTask& task, const TrainConfig& config, int64_t rows,
                                      torch::Device device, comm::Communicator& world);

}  // namespace paisoar::train
