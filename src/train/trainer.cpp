// Trainer::fit: one loop, every feature switched by the config. Rank 0 prints
// and writes metrics; every rank runs the same number of steps (the sampler
// pads), so the DDP collectives always pair up.
#include "paisoar/train/trainer.h"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "paisoar/amp/autocast.h"
#include "paisoar/amp/dtype_choice.h"
#include "paisoar/amp/finite_loss_check.h"
#include "paisoar/amp/grad_scaler.h"
#include "paisoar/amp/precision_regions.h"
#include "paisoar/comm/communicator.h"
#include "paisoar/comm/progress_board.h"
#include "paisoar/data/data_loader.h"
#include "paisoar/memory/checkpoint_regions.h"
#include "paisoar/memory/device_memory.h"
#include "paisoar/memory/tracking_allocator.h"
#include "paisoar/optim/grad_clip.h"
#include "paisoar/optim/lr_schedule.h"
#include "paisoar/parallel/hybrid_mesh.h"
#include "paisoar/parallel/replicated_parameters.h"
#include "paisoar/parallel/stage_sync.h"
#include "paisoar/pipeline/pipeline.h"
#include "paisoar/profiler.h"
#include "src/train/grad_sync.h"
#include "src/train/memory_table.h"
#include "src/train/run_report.h"
#include "src/train/region_checks.h"
#include "src/train/stage_plan.h"
#include "src/train/trainer_evaluate.h"
#include "src/train/trainer_checkpoint.h"
#include "src/util/heartbeat.h"

namespace paisoar::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

optim::LrDecay decay_of(const std::string& name) {
  if (name == "cosine") return optim::LrDecay::Cosine;
  if (name == "polynomial") return optim::LrDecay::Polynomial;
  if (name == "constant") return optim::LrDecay::Constant;
  throw ConfigError("schedule.decay: '" + name + "' is not one of: constant, cosine, polynomial");
}

// The run's precision: amp.dtype, with `auto` resolved for `device`.
struct Precision {
  amp::AutocastOptions autocast;
  std::string name;    // bf16, fp16 or fp32
  std::string reason;  // why, for the log
};

Precision precision_for(const AmpConfig& amp, c10::DeviceType device) {
  Precision p;
  p.autocast.device = device;
  if (amp.dtype == "auto") {
    const amp::DtypeChoice choice = amp::choose_autocast_dtype(device);
    p.autocast.enabled = choice.autocast;
    p.autocast.dtype = choice.dtype;
    p.name = choice.autocast ? (choice.dtype == c10::ScalarType::Half ? "fp16" : "bf16") : "fp32";
    p.reason = "amp.dtype auto: " + choice.reason;
    return p;
  }
  p.autocast.enabled = amp.dtype != "fp32";
  p.autocast.dtype = amp.dtype == "fp16" ? c10::ScalarType::Half : c10::ScalarType::BFloat16;
  p.name = amp.dtype;
  p.reason = "amp.dtype " + amp.dtype + " (set in the config)";
  return p;
}

// What the advisor may suggest for a compute-bound full-precision run.
std::string fast_precision_on(c10::DeviceType device) {
  if (!amp::low_precision_is_fast(device, c10::ScalarType::BFloat16)) return "";
  return device == c10::DeviceType::CUDA ? "amp.dtype: bf16 (or fp16, with loss scaling)"
                                         : "amp.dtype: bf16 (this CPU has AVX512-BF16/AMX)";
}

}  // namespace

Trainer::Trainer(TrainConfig config, std::shared_ptr<comm::Communicator> comm, RunEnvironment run)
    : config_(std::move(config)), comm_(std::move(comm)), run_(std::move(run)) {
  if (!comm_) throw std::invalid_argument("Trainer: the communicator is null");
  validate(config_, comm_->size());
  const parallel::ParallelLayout layout = parallel_layout(config_, comm_->size());
  if (layout.model_parallel()) mesh_ = std::make_shared<parallel::HybridMesh>(comm_, layout);
}

Trainer::~Trainer() = default;

std::shared_ptr<comm::Communicator> Trainer::tensor_group() const {
  return mesh_ ? mesh_->tensor_group() : nullptr;
}

TrainResult Trainer::fit(const TrainTask& task) {
  const TrainConfig& c = config_;
  if (!task.model || !task.forward || !task.train_data) {
    throw std::invalid_argument("TrainTask: model, forward and train_data are required");
  }
  const int64_t rank = comm_->rank(), world = comm_->size();
  const bool lead = rank == 0;
  // The data dimension: the whole world without model parallelism.
  const std::shared_ptr<comm::Communicator> data_comm = mesh_ ? mesh_->data_group() : comm_;
  const int64_t data_rank = data_comm->rank(), data_world = data_comm->size();
  auto loss_fn = task.loss ? task.loss : [](const torch::Tensor& out, const torch::Tensor& y) {
    return torch::cross_entropy_loss(out, y);
  };
  const auto params = task.model->parameters();
  const torch::Device model_device = params.empty() ? torch::Device(torch::kCPU) : params[0].device();
  const auto device = model_device.type();

  const int64_t accumulation = c.train.grad_accumulation;  // 1 with a pipeline (validate)
  data::DataLoaderOptions loader_options;
  loader_options.batch_size = c.train.batch_size / data_world / accumulation;
  loader_options.workers = c.data.workers;
  loader_options.prefetch_factor = c.data.prefetch_factor;
  loader_options.rank = data_rank;
  loader_options.world_size = data_world;
  loader_options.seed = static_cast<uint64_t>(c.seed);
  loader_options.drop_last = true;  // whole optimizer steps only
  loader_options.on_error = c.data.on_error == "skip" ? data::OnError::Skip : data::OnError::Raise;
  loader_options.pin_memory = device == c10::DeviceType::CUDA;
  data::DataLoader loader(task.train_data, loader_options);
  const int64_t steps_per_epoch = loader.batches_per_epoch() / accumulation;
  if (steps_per_epoch < 1) {
    throw ConfigError("train.batch_size: " + std::to_string(c.train.batch_size) + " is more than the " +
                      std::to_string(task.train_data->size()) +
                      " training samples can fill once; use a smaller batch or more data");
  }
  int64_t total_steps = steps_per_epoch * c.train.epochs;
  if (c.train.max_steps > 0) total_steps = std::min(total_steps, c.train.max_steps);

  const double lr = optim::scaled_lr(c.optimizer.lr, c.train.batch_size, c.optimizer.lr_batch);
  checkpoint::CheckpointOptions checkpoint_options;
  checkpoint_options.dir = c.checkpoint.dir.empty() ? c.run_dir + "/checkpoints" : c.checkpoint.dir;
  checkpoint_options.every_steps = c.checkpoint.every_steps;
  checkpoint_options.keep_last = c.checkpoint.keep_last;
  checkpoint_options.rank = static_cast<int>(rank);
  checkpoint::CheckpointManager checkpoints = open_checkpoints(checkpoint_options, comm_);
  std::string report_plan;  // the pipeline's stages, printed by rank 0
  const Precision precision = precision_for(c.amp, device);
  const amp::AutocastOptions& autocast_options = precision.autocast;
  amp::GradScalerOptions scaler_options;
  scaler_options.enabled = autocast_options.enabled && autocast_options.dtype == c10::ScalarType::Half;
  scaler_options.init_scale = c.amp.init_scale;
  scaler_options.growth_interval = c.amp.growth_interval;
  amp::GradScaler scaler(scaler_options, comm_);
  // A pipeline: this rank trains its stage of task.layers; the loss (scaled
  // for fp16) is computed on the last stage inside the pipeline's step.
  std::optional<pipeline::Pipeline> pipe;
  std::string pipeline_bounds;  // "0,2,3": saved with each checkpoint
  std::shared_ptr<torch::nn::Module> stage_model = task.model;  // what this rank trains
  if (c.parallel.pipeline > 1) {
    // A resume cuts the stages where its checkpoint did; a new run profiles.
    std::optional<std::vector<int>> bounds;
    if (c.checkpoint.resume) bounds = checkpointed_pipeline_bounds(checkpoints);
    const int64_t micro_rows = loader_options.batch_size / c.parallel.micro_batches;
    const pipeline::PartitionPlan plan = choose_plan(task, c, micro_rows, model_device, *comm_, bounds, &report_plan);
    pipeline_bounds = bounds_text(plan);
    pipeline::PipelineOptions pipe_options;
    pipe_options.micro_batches = static_cast<int>(c.parallel.micro_batches);
    pipe_options.schedule = pipeline::parse_schedule(c.parallel.schedule);
    pipe.emplace(task.layers, plan, mesh_->pipeline_group(),
                 [&scaler, loss_fn](const torch::Tensor& out, const torch::Tensor& y) {
                   return scaler.scale(loss_fn(out, y));
                 },
                 pipe_options);
    stage_model = pipe->module().ptr();
  }
  GradSync sync(c, stage_model, data_comm, lr, run_.job.local_world_size);  // ZeRO: collective, shards the model now
  if (mesh_) {
    // One replica's gradients are spread over its stages and tensor shards.
    SplitModelNorm norm{mesh_->model_group(), comm_, {}};
    if (mesh_->tensor_rank() != 0) norm.uncounted = parallel::tensor_replicated_parameters(*stage_model);
    sync.set_split_model_norm(std::move(norm));
  }
  torch::optim::Optimizer& optimizer = sync.optimizer();
  optim::LrScheduleOptions schedule_options;
  schedule_options.warmup_steps = std::min(c.schedule.warmup_steps, total_steps);
  schedule_options.decay = decay_of(c.schedule.decay);
  schedule_options.total_steps = total_steps;
  optim::LrSchedule schedule(optimizer, schedule_options);

  const amp::PrecisionPolicy policy = policy_of(c.amp);
  // A pipeline stage sees only its own regions: the patterns are not checked there.
  bool policy_checked = policy.empty() || pipe;

  // Resume before DDP's reducer exists: it then broadcasts the restored weights.
  TrainerState state{task.model.get(), &optimizer, &schedule, &scaler, sync.zero()};
  if (mesh_) {
    // Each rank holds a part: its stage's (shard of the) layers.
    state.model = stage_model.get();
    state.part_name = "p" + std::to_string(mesh_->pipeline_rank()) + "-t" + std::to_string(mesh_->tensor_rank());
    state.part_group = data_comm;
    state.world = comm_;
    state.part_layout = "pipeline " + std::to_string(c.parallel.pipeline) + " x tensor " +
                        std::to_string(c.parallel.tensor);
    state.pipeline_bounds = pipeline_bounds;
  }
  TrainResult result;
  std::string resumed_message;
  int64_t step = 0;
  data::LoaderPosition position;
  if (c.checkpoint.resume) {
    if (auto point = restore_trainer_state(checkpoints, state, comm_)) {
      step = point->step;
      position = point->loader;
      result.resumed_from = point->path;
      if (position.batch % accumulation != 0) {
        throw ConfigError("train.grad_accumulation: " + point->path + " stopped at micro-batch " +
                          std::to_string(position.batch) + ", not a step boundary for " +
                          std::to_string(accumulation) +
                          " micro-batches; resume with the accumulation it was made with");
      }
      resumed_message = "resumed from " + point->path + " at step " + std::to_string(step);
    }
  }
  const std::string config_text = dump_config(c);
  int64_t saved_step = step;

  sync.start();
  if (pipe) {
    parallel::sync_in_last_backward(*pipe, [&sync](bool on) {
      sync.set_sync(on);
      sync.pre_forward();
    });
  }
  std::optional<memory::CheckpointRegions> checkpoint_regions;
  if (!c.activation_checkpointing.empty()) checkpoint_regions.emplace(c.activation_checkpointing);
  bool checkpointing_checked = !checkpoint_regions;
  if (c.profiler.memory && device == c10::DeviceType::CPU) memory::install_cpu_tracking_allocator();
  int64_t peak_step_bytes = -1;  // the most a step allocated above its start (profiler.memory)
  amp::FiniteLossCheckOptions finite_options;
  finite_options.action = c.amp.skip_nonfinite ? amp::OnNonFiniteLoss::Skip : amp::OnNonFiniteLoss::Stop;
  amp::FiniteLossCheck finite_loss(finite_options, comm_);
  RunReport report(c, lead, total_steps);
  if (!resumed_message.empty()) report.message(resumed_message);
  if (mesh_) {
    report.message("parallel: " + mesh_->layout().to_string() +
                   (pipe ? ", " + std::to_string(c.parallel.micro_batches) + " micro-batches, " + c.parallel.schedule +
                               " schedule" : ""));
    if (!report_plan.empty()) report.message(report_plan);
  }
  profiler::ProfilerOptions profiler_options;
  profiler_options.enabled = c.profiler.enabled;
  profiler_options.rank = static_cast<int>(rank);
  if (c.profiler.trace_start_step >= 0) {
    profiler_options.trace_start_step = c.profiler.trace_start_step;
    profiler_options.trace_steps = c.profiler.trace_steps;
    profiler_options.trace_path = c.run_dir + "/trace-rank" + std::to_string(rank) + ".json";
    profiler_options.op_profile = c.profiler.op_profile;
    profiler_options.op_trace_path = c.run_dir + "/ops-rank" + std::to_string(rank) + ".json";
    std::error_code ec;
    std::filesystem::create_directories(c.run_dir, ec);
  }
  profiler::StepProfiler prof(profiler_options);
  std::vector<double> loss_scales;  // after each update, for the advisor
  int64_t skipped_steps = 0;

  {
    const std::string sync_name = c.zero.stage > 0 ? "ZeRO stage " + std::to_string(c.zero.stage)
                                                   : "DDP compression " + c.distributed.compression;
    char header[400];
    std::snprintf(header, sizeof(header),
                  "paisoar train: %lld samples, %lld %s x %lld x %lld accumulation = batch %lld, "
                  "%s, %s lr %.4g (warmup %lld, %s over %lld steps), %s, %lld loader "
                  "workers per rank",
                  static_cast<long long>(task.train_data->size()), static_cast<long long>(data_world),
                  mesh_ ? "replicas" : "ranks",
                  static_cast<long long>(loader_options.batch_size), static_cast<long long>(accumulation),
                  static_cast<long long>(c.train.batch_size), precision.name.c_str(), c.optimizer.name.c_str(), lr,
                  static_cast<long long>(schedule_options.warmup_steps), c.schedule.decay.c_str(),
                  static_cast<long long>(total_steps), sync_name.c_str(),
                  static_cast<long long>(c.data.workers));
    report.message(header);
    report.message("paisoar train: precision " + precision.name + ": " + precision.reason);
  }

  const int64_t first_step = step;
  double eval_seconds = 0;  // spent in evaluation passes: not training time
  const auto start = Clock::now();
  const auto train_time = [&] { return seconds_since(start) - eval_seconds; };
  int64_t evaluated_at = -1;
  bool stop = false;  // eval.stop_at_target and the target was reached
  comm::ProgressBoard progress(comm_);  // names the ranks behind when a collective times out
  util::Heartbeat heartbeat(run_.heartbeat_file);  // for the launcher's watchdog (--heartbeat_timeout)
  EvalRole eval_role;
  eval_role.index = data_rank;
  eval_role.count = data_world;
  eval_role.counts = (!pipe || pipe->is_last()) && (!mesh_ || mesh_->tensor_rank() == 0);
  eval_role.forward = pipe ? std::function<torch::Tensor(const torch::Tensor&)>(
                                 [&pipe](const torch::Tensor& x) { return pipe->infer(x); })
                           : task.forward;
  const auto run_evaluation = [&](int64_t epoch) {
    const auto began = Clock::now();
    heartbeat.beat();
    result.accuracy = evaluate(task, *comm_, eval_role, c.data.workers, autocast_options, policy, c.data.eval_limit);
    heartbeat.beat();
    eval_seconds += seconds_since(began);
    evaluated_at = step;
    const double trained = train_time();
    if (c.eval.target_accuracy > 0 && result.time_to_target_s < 0 && result.accuracy >= c.eval.target_accuracy) {
      result.time_to_target_s = trained;
      stop = c.eval.stop_at_target;
    }
    report.evaluation(epoch, step, result.accuracy, trained);
  };
  try {
    for (int64_t epoch = position.epoch; epoch < c.train.epochs && step < total_steps && !stop; ++epoch) {
      const int64_t first_batch = epoch == position.epoch ? position.batch : 0;
      loader.start_epoch(epoch, first_batch);
      double loss_sum = 0, wait_sum = 0;
      int64_t epoch_steps = 0;
      report.begin_epoch(epoch, std::min(steps_per_epoch - first_batch / accumulation, total_steps - step));
      const auto epoch_start = Clock::now();
      const double epoch_eval_start = eval_seconds;
      for (int64_t i = first_batch / accumulation; i < steps_per_epoch && step < total_steps && !stop; ++i) {
        progress.post(step);
        heartbeat.beat();
        prof.begin_step(step);
        std::optional<memory::PeakMeter> meter;
        if (c.profiler.memory) meter.emplace(model_device);
        sync.zero_grad();
        double step_loss = 0;
        bool skip = false;  // a non-finite loss (agreed by every rank) under amp.skip_nonfinite
        for (int64_t micro = 0; micro < accumulation && pipe; ++micro) {
          // The pipeline: forward and backward of its micro-batches in one call
          // (timed as forward; the wait for neighbours carved out as communication).
          std::optional<data::Batch> batch;
          {
            auto timed = prof.phase(profiler::Phase::DataWait);
            batch = loader.next();
          }
          if (!batch) throw std::logic_error("Trainer: the loader ran out of batches within a step");
          wait_sum += batch->wait_s;
          torch::Tensor loss;
          {
            auto timed = prof.phase(profiler::Phase::Forward);
            amp::autocast guard(autocast_options);
            amp::ActivePolicy pins(policy, device);
            std::optional<amp::ActiveRegionRunner> recompute;
            if (checkpoint_regions) recompute.emplace(*checkpoint_regions);
            loss = pipe->step(batch->data.to(model_device), batch->labels.to(model_device));
          }
          prof.add(profiler::Phase::Communication, pipe->last_step().recv_wait_s, profiler::Phase::Forward);
          if (scaler_options.enabled) loss = loss / scaler.get_scale();
          if (!finite_loss(loss, step)) {
            skip = true;
            break;
          }
          step_loss += loss.item<double>();
        }
        for (int64_t micro = 0; micro < accumulation && !pipe; ++micro) {
          std::optional<data::Batch> batch;
          {
            auto timed = prof.phase(profiler::Phase::DataWait);
            batch = loader.next();
          }
          if (!batch) throw std::logic_error("Trainer: the loader ran out of batches within a step");
          wait_sum += batch->wait_s;
          batch->data = batch->data.to(model_device, /*non_blocking=*/true);
          batch->labels = batch->labels.to(model_device, /*non_blocking=*/true);
          sync.set_sync(micro + 1 == accumulation);
          torch::Tensor out, loss;
          {
            auto timed = prof.phase(profiler::Phase::Forward);
            sync.pre_forward();
            amp::autocast guard(autocast_options);
            amp::ActivePolicy pins(policy, device);
            std::optional<amp::ActiveRegionRunner> recompute;
            if (checkpoint_regions) recompute.emplace(*checkpoint_regions);
            out = task.forward(batch->data);
            loss = loss_fn(out, batch->labels);
            if (!policy_checked) {
              check_policy_matched(policy, pins.regions_seen());
              policy_checked = true;
            }
            if (!checkpointing_checked) {
              check_checkpointing_matched(*checkpoint_regions);
              checkpointing_checked = true;
            }
          }
          sync.post_forward({out});
          if (!finite_loss(loss, step)) {
            skip = true;  // the rest of the step's micro-batches are dropped with it
            break;
          }
          {
            auto timed = prof.phase(profiler::Phase::Backward);
            scaler.scale(loss / static_cast<double>(accumulation)).backward();
          }
          step_loss += loss.item<double>() / static_cast<double>(accumulation);
        }
        const auto& reducer_stats = sync.last_stats();
        prof.add(profiler::Phase::Communication, reducer_stats.exposed_comm_s, profiler::Phase::Backward);
        profiler::add_bucket_spans(prof, reducer_stats.bucket_spans);
        {
          auto timed = prof.phase(profiler::Phase::Optimizer);
          if (skip) {
            sync.zero_grad();  // no update: the step's gradients are dropped on every rank
            ++skipped_steps;
          } else {
            if (c.optimizer.clip_grad_norm > 0) {
              scaler.unscale_(optimizer);
              sync.clip_grad_norm(c.optimizer.clip_grad_norm);
            }
            if (!scaler.step(optimizer)) ++skipped_steps;
            scaler.update();
          }
          schedule.step();
        }
        if (meter) peak_step_bytes = std::max(peak_step_bytes, meter->peak_above_start());
        if (scaler_options.enabled) loss_scales.push_back(scaler.get_scale());
        prof.end_step();
        ++step;
        ++epoch_steps;
        loss_sum += step_loss;
        if (checkpoints.due(step) &&
            save_checkpoint(checkpoints, comm_, c.checkpoint.on_error, state, step, loader.position(), config_text)) {
          saved_step = step;
        }
        if (task.on_step) task.on_step(step);
        const bool epoch_end = i + 1 == steps_per_epoch || step == total_steps;
        if (report.step_done(step, epoch_end)) {
          const double elapsed = seconds_since(epoch_start) - (eval_seconds - epoch_eval_start);
          const auto& stats = sync.last_stats();
          StepLog log;
          log.epoch = epoch;
          log.step = step;
          log.loss = loss_sum / epoch_steps;
          log.lr = schedule.get_last_lr()[0];
          log.ms_per_step = 1e3 * elapsed / epoch_steps;
          log.samples_per_s = c.train.batch_size * epoch_steps / std::max(elapsed, 1e-9);
          log.data_wait_ms = 1e3 * wait_sum / (epoch_steps * accumulation);
          log.backward_ms = 1e3 * stats.backward_s;
          log.exposed_comm_ms = 1e3 * stats.exposed_comm_s;
          log.loss_scale = scaler.get_scale();
          report.log_step(log);
        }
        if (task.eval_data && c.eval.every_steps > 0 && step % c.eval.every_steps == 0) run_evaluation(epoch);
      }
      report.end_epoch();
      result.final_loss = epoch_steps > 0 ? loss_sum / epoch_steps : 0;
      const bool last = epoch + 1 == c.train.epochs || step >= total_steps || stop;
      const bool due = c.eval.every_epochs > 0 && (epoch + 1) % c.eval.every_epochs == 0;
      if (task.eval_data && (last || due) && evaluated_at != step) run_evaluation(epoch);
    }
  } catch (const comm::CommError& e) {
    throw progress.explain(e, step);
  }
  if (saved_step != step) {
    save_checkpoint(checkpoints, comm_, c.checkpoint.on_error, state, step, loader.position(), config_text);
  }
  if (task.eval_data && result.accuracy < 0) {
    // Resumed from a run that had already finished: score what it left.
    result.accuracy = evaluate(task, *comm_, eval_role, c.data.workers, autocast_options, policy, c.data.eval_limit);
    char line[96];
    std::snprintf(line, sizeof(line), "test accuracy %.2f%% (the checkpoint's training was complete)",
                  result.accuracy);
    report.message(line);
  }
  result.steps = step - first_step;
  result.global_step = step;
  result.seconds = seconds_since(start);
  if (c.profiler.enabled && result.steps > 0) {
    // Every rank takes part in the gather; rank 0 judges and prints.
    const auto summary = prof.summary();
    auto run = profiler::measurements_from(summary);
    run.per_rank_step_s = profiler::gather_step_times(*comm_, run.step_mean_s);
    run.loss_scale_history = loss_scales;
    run.skipped_steps = skipped_steps;
    run.mixed_precision = autocast_options.enabled;
    run.fast_precision = fast_precision_on(device);
    if (lead) report.message(profiler::format_report(summary, profiler::advise(run)));
  }
  if (c.profiler.memory) {
    // Every rank takes part in the gather; rank 0 prints.
    auto mine = sync.measure_memory(static_cast<int>(rank), model_device);
    mine.peak_activation_bytes = peak_step_bytes;
    const auto reports = gather_memory_reports(*comm_, mine);
    if (lead) report.message("memory per rank (peak act: the most one step allocated above its start)\n" +
                             memory::format_memory_reports(reports));
  }
  sync.finish();
  const double trained = train_time();
  result.samples_per_s = trained > 0 ? c.train.batch_size * result.steps / trained : 0;
  report.summary(result, c.eval.target_accuracy);
  return result;
}

}  // namespace paisoar::train
