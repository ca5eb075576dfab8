// plan_run: the config's sections mapped onto the subsystems' option structs.
#include "src/train/run_plan.h"

#include <algorithm>
#include <cstdio>

namespace paisoar::train {
namespace {

optim::LrDecay lr_decay_of(DecayShape shape) {
  switch (shape) {
    case DecayShape::Constant:
      return optim::LrDecay::Constant;
    case DecayShape::Polynomial:
      return optim::LrDecay::Polynomial;
    case DecayShape::Cosine:
      break;
  }
  return optim::LrDecay::Cosine;
}

}  // namespace

data::DataLoaderOptions loader_options(const TrainConfig& c, const RankPlace& place) {
  data::DataLoaderOptions o;
  o.batch_size = c.train.batch_size / place.data_world / c.train.grad_accumulation;
  o.workers = c.data.workers;
  o.prefetch_factor = c.data.prefetch_factor;
  o.rank = place.data_rank;
  o.world_size = place.data_world;
  o.seed = static_cast<uint64_t>(c.seed);
  o.drop_last = true;  // whole optimizer steps only
  o.on_error = c.data.on_error == OnBadSample::Skip ? data::OnError::Skip : data::OnError::Raise;
  o.pin_memory = place.device.type() == c10::DeviceType::CUDA;
  return o;
}

layout::Placements placements_for(const TrainConfig& c, const hybrid::HybridMesh* mesh, int world_size, int rank) {
  const auto sharding = layout::DataSharding::of_zero_stage(c.zero.stage);
  if (!mesh) return layout::Placements({world_size, 1, 1}, sharding, {rank, 0, 0});
  return layout::Placements(mesh->layout(), sharding, {mesh->data_rank(), mesh->pipeline_rank(), mesh->tensor_rank()});
}

ModelCut cut_of(const layout::Placements& placements) {
  ModelCut cut;
  cut.pipeline = placements.mesh().pipeline;
  cut.tensor = placements.mesh().tensor;
  cut.part = {placements.at().pipeline, placements.at().tensor};
  return cut;
}

RunPlan plan_run(const TrainConfig& c, const RankPlace& place, int64_t batches_per_epoch, int64_t train_samples) {
  RunPlan p;
  p.loader = loader_options(c, place);
  p.accumulation = c.train.grad_accumulation;  // 1 with a pipeline (validate)
  p.steps_per_epoch = batches_per_epoch / p.accumulation;
  if (p.steps_per_epoch < 1) {
    throw ConfigError("train.batch_size: " + std::to_string(c.train.batch_size) + " is more than the " +
                      std::to_string(train_samples) +
                      " training samples can fill once; use a smaller batch or more data");
  }
  p.total_steps = p.steps_per_epoch * c.train.epochs;
  if (c.train.max_steps > 0) p.total_steps = std::min(p.total_steps, c.train.max_steps);
  p.lr = optim::scaled_lr(c.optimizer.lr, c.train.batch_size, c.optimizer.lr_batch);
  p.schedule.warmup_steps = std::min(c.schedule.warmup_steps, p.total_steps);
  p.schedule.decay = lr_decay_of(c.schedule.decay);
  p.schedule.total_steps = p.total_steps;

  p.precision = precision_for(c.amp, place.device.type());
  p.scaler.enabled = p.precision.scales_loss();
  p.scaler.init_scale = c.amp.init_scale;
  p.scaler.growth_interval = c.amp.growth_interval;
  // The scale on the model's device from the start: a pipeline stage other
  // than the last steps gradients without scaling a loss itself.
  p.scaler.device = place.device;
  // The Trainer stops a run whose scale keeps falling (gradients overflow at
  // any scale) instead of skipping forever; Python's GradScaler leaves it off.
  p.scaler.min_scale = 1.0;
  p.finite_loss.action = c.amp.skip_nonfinite ? amp::OnNonFiniteLoss::Skip : amp::OnNonFiniteLoss::Stop;

  p.sync.optimizer = c.optimizer;
  p.sync.lr = p.lr;
  p.sync.sharding = place.placements.sharding();
  p.sync.ddp.bucket_cap_mb = c.distributed.bucket_cap_mb;
  p.sync.ddp.overlap = c.distributed.overlap;
  p.sync.ddp.compression.type = ddp::parse_compression(c.distributed.compression);
  p.sync.ddp.ranks_per_node = static_cast<int>(place.ranks_per_node);
  p.sync.zero.bucket_cap_mb = c.distributed.bucket_cap_mb;
  p.sync.zero.overlap = c.distributed.overlap;
  p.sync.zero.prefetch = c.zero.prefetch;
  // distributed.compression fp16/bf16 under ZeRO: the reduce-scatter in that precision (validate refuses the rest).
  if (c.distributed.compression == "fp16") p.sync.zero.reduce_dtype = torch::kHalf;
  if (c.distributed.compression == "bf16") p.sync.zero.reduce_dtype = torch::kBFloat16;

  p.checkpoint.dir = c.checkpoint.dir.empty() ? c.run_dir + "/checkpoints" : c.checkpoint.dir;
  p.checkpoint.every_steps = c.checkpoint.every_steps;
  p.checkpoint.keep_last = c.checkpoint.keep_last;
  p.checkpoint.rank = static_cast<int>(place.rank);

  const std::string rank = std::to_string(place.rank);
  p.profiler.enabled = c.profiler.enabled;
  p.profiler.rank = static_cast<int>(place.rank);
  if (c.profiler.trace_start_step >= 0) {
    p.profiler.trace_start_step = c.profiler.trace_start_step;
    p.profiler.trace_steps = c.profiler.trace_steps;
    p.profiler.trace_path = c.run_dir + "/trace-rank" + rank + ".json";
    p.profiler.op_profile = c.profiler.op_profile;
    p.profiler.op_trace_path = c.run_dir + "/ops-rank" + rank + ".json";
  }
  return p;
}

std::string header_line(const TrainConfig& c, const RunPlan& p, int64_t train_samples,
                        const layout::Placements& placements) {
  const layout::DataSharding& sharding = placements.sharding();
  const std::string sync_name = sharding.any() ? "ZeRO-" + std::to_string(sharding.stage()) + " (" +
                                                     sharding.what() + " sharded)"
                                               : "DDP compression " + c.distributed.compression;
  const int64_t data_world = placements.mesh().data;
  const bool replicas = placements.holds_part();
  char header[400];
  std::snprintf(header, sizeof(header),
                "paisoar train: %lld samples, %lld %s x %lld x %lld accumulation = batch %lld, "
                "%s, %s lr %.4g (warmup %lld, %s over %lld steps), %s, %lld loader "
                "workers per rank",
                static_cast<long long>(train_samples), static_cast<long long>(data_world),
                replicas ? "replicas" : "ranks", static_cast<long long>(p.loader.batch_size),
                static_cast<long long>(p.accumulation), static_cast<long long>(c.train.batch_size),
                p.precision.name.c_str(), c.optimizer.name.c_str(), p.lr,
                static_cast<long long>(p.schedule.warmup_steps), name_of(c.schedule.decay),
                static_cast<long long>(p.total_steps), sync_name.c_str(), static_cast<long long>(c.data.workers));
  return header;
}

}  // namespace paisoar::train
