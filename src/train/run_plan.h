// RunPlan: every option a Trainer run derives from its validated config,
// worked out once before the run's parts are built: the loader's share of the
// batch, the step counts, the scaled learning rate and its schedule, the
// precision, checkpoints, loss checks, the profiler and the gradient sync.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "paisoar/amp/finite_loss_check.h"
#include "paisoar/amp/grad_scaler.h"
#include "paisoar/checkpoint/checkpoint_manager.h"
#include "paisoar/data/data_loader.h"
#include "paisoar/hybrid/hybrid_mesh.h"
#include "paisoar/layout/placements.h"
#include "paisoar/optim/lr_schedule.h"
#include "paisoar/profiler/step_profiler.h"
#include "paisoar/train/model_state_layout.h"
#include "paisoar/train/train_config.h"
#include "src/train/grad_sync.h"
#include "src/config/precision_context.h"

namespace paisoar::train {

// Where this rank sits, the rest of what the plan depends on.
struct RankPlace {
  int64_t rank = 0;                       // in the world
  int64_t data_rank = 0, data_world = 1;  // along the data dimension (the world without model parallelism)
  torch::Device device{torch::kCPU};      // the model's
  int64_t ranks_per_node = 1;             // for DDP's hierarchical averaging across nodes
  layout::Placements placements;          // what this rank holds
};

// What this rank holds under `config`: its coordinate in `mesh` (null: the
// world is all data ranks, `world_size` of them, and this is `rank`) and what
// zero.stage shards. The one place that reads zero.stage.
layout::Placements placements_for(const TrainConfig& config, const hybrid::HybridMesh* mesh, int world_size,
                                  int rank);

struct RunPlan {
  data::DataLoaderOptions loader;  // one micro-batch of this rank's share
  int64_t accumulation = 1;        // micro-batches per optimizer step (1 with a pipeline)
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;         // epochs x steps_per_epoch, or train.max_steps when fewer
  double lr = 0;                   // optimizer.lr scaled to the global batch
  optim::LrScheduleOptions schedule;
  Precision precision;
  amp::GradScalerOptions scaler;
  amp::FiniteLossCheckOptions finite_loss;
  checkpoint::CheckpointOptions checkpoint;
  profiler::ProfilerOptions profiler;
  SyncPlan sync;                   // DDP's or ZeRO's options and the optimizer
};

// How the run cuts the model, from its placements (ModelStateLayout's cut;
// the bounds are the pipeline's, once it is built).
ModelCut cut_of(const layout::Placements& placements);

// The loader's options alone: the loader's count of batches completes the plan.
data::DataLoaderOptions loader_options(const TrainConfig& config, const RankPlace& place);

// Throws ConfigError when train.batch_size is more than `train_samples` fill once.
// `batches_per_epoch`: the loader's (with loader_options).
RunPlan plan_run(const TrainConfig& config, const RankPlace& place, int64_t batches_per_epoch,
                 int64_t train_samples);

// The run's first line: data, batch split, precision, optimizer, schedule,
// what is sharded and loader.
std::string header_line(const TrainConfig& config, const RunPlan& plan, int64_t train_samples,
                        const layout::Placements& placements);

}  // namespace paisoar::train
