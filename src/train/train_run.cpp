// TrainRun: the constructor's body builds the collective parts one after
// another in the order of their collectives (checkpoint directory, the
// writer's group, pipeline plan, ZeRO's shards, the resume, DDP's broadcast
// of the restored weights), then the counting allocator and the lead's
// report.
#include "src/train/train_run.h"

#include <c10/util/Exception.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "paisoar/memory/device_memory.h"
#include "paisoar/memory/tracking_allocator.h"
#include "paisoar/hybrid/replicated_parameters.h"
#include "paisoar/profiler.h"
#include "paisoar/comm/agreement.h"
#include "paisoar/error.h"
#include "src/train/data_parallel_steps.h"
#include "src/diagnosis/memory_prediction.h"
#include "src/train/pipeline_steps.h"
#include "src/train/trainer_evaluate.h"

namespace paisoar::train {
namespace {

const TrainTask& checked_task(const TrainTask& task) {
  if (!task.model || !task.forward || !task.train_data) {
    C10_THROW_ERROR(ValueError, "TrainTask: model, forward and train_data are required");
  }
  return task;
}

RankPlace place_of(const TrainConfig& config, const comm::Communicator& world, const hybrid::HybridMesh* mesh,
                   const comm::Communicator& data_comm, const torch::nn::Module& model, int64_t ranks_per_node) {
  RankPlace place;
  place.ranks_per_node = ranks_per_node;
  place.rank = world.rank();
  place.data_rank = data_comm.rank();
  place.data_world = data_comm.size();
  place.placements = placements_for(config, mesh, world.size(), world.rank());
  const auto params = model.parameters();
  place.device = params.empty() ? torch::Device(torch::kCPU) : params[0].device();
  return place;
}

// The pipeline, built first (collective: it profiles), or plain data parallelism.
std::unique_ptr<MicroSteps> micro_steps_for(const TrainConfig& c, const TrainTask& task, const RunPlan& plan,
                                            const RankPlace& place, comm::Communicator& world,
                                            hybrid::HybridMesh* mesh,
                                            const std::optional<ResumeSource>& newest,
                                            amp::GradScaler& scaler) {
  if (place.placements.mesh().pipeline == 1) {
    return std::make_unique<DataParallelSteps>(task, plan.accumulation, plan.precision.policy,
                                               !c.activation_checkpointing.empty());
  }
  const int64_t micro_rows = plan.loader.batch_size / c.parallel.micro_batches;
  return std::make_unique<PipelineSteps>(task, c, micro_rows, place.device, world, *mesh,
                                         checkpointed_pipeline_bounds(newest), scaler);
}

std::vector<int> all_ranks(const comm::Communicator& world) {
  std::vector<int> ranks(static_cast<size_t>(world.size()));
  for (int r = 0; r < world.size(); ++r) ranks[static_cast<size_t>(r)] = r;
  return ranks;
}

}  // namespace

TrainRun::TrainRun(const TrainConfig& config, const TrainTask& task, std::shared_ptr<comm::Communicator> world,
                   hybrid::HybridMesh* mesh, const RunEnvironment& env)
    : config_(config),
      task_(checked_task(task)),
      world_(std::move(world)),
      mesh_(mesh),
      data_comm_(mesh ? mesh->data_group() : world_),
      place_(place_of(config, *world_, mesh, *data_comm_, *task.model, env.job.local_world_size)),
      loader_(task.train_data, loader_options(config, place_)),
      plan_(plan_run(config, place_, loader_.batches_per_epoch(), task.train_data->size())),
      config_text_(dump_config(config)),
      scaler_(plan_.scaler, world_),
      finite_loss_(plan_.finite_loss, world_) {
  // The collective parts, in the order every rank runs their collectives:
  checkpoint::CheckpointOptions checkpoints = plan_.checkpoint;
  checkpoints.file_system = env.checkpoint_files;
  if (env.checkpoints_read_only) checkpoints.rank = -1;  // every rank reads; none writes or locks
  checkpoints_.emplace(open_checkpoints(checkpoints, world_));  // 1. rank 0's directory check, agreed
  if (config.checkpoint.async) checkpoint_comm_ = world_->new_group(all_ranks(*world_));  // 2. a group
  if (config.checkpoint.resume) {  // 3. the checkpoint every rank can use
    newest_ = newest_checkpoint(*checkpoints_, cut_of(place_.placements), world_);
  }
  micro_ = micro_steps_for(config, task, plan_, place_, *world_, mesh, newest_, scaler_);  // 4. a pipeline's profile
  tied_ = micro_->tie();  // 5. the groups of the parameters several stages hold
  sync_ = make_grad_sync(plan_.sync, micro_->model(), micro_->layers(), tied_ ? tied_->names() : std::vector<std::string>{},
                         data_comm_);  // 6. ZeRO shards the model
  schedule_.emplace(sync_->optimizer(), plan_.schedule);
  state_ = trainer_state();
  start_ = resume();  // 7. the step agreed, ZeRO's state loaded; before DDP's reducer exists:
  saved_step_ = start_.step;
  if (place_.placements.holds_part()) {
    // One replica's gradients are spread over its stages and tensor shards;
    // a parameter held twice (tensor-replicated, or tied across stages) counts once.
    SplitModelNorm norm{mesh_->model_group(), world_, {}};
    if (mesh_->tensor_rank() != 0) norm.uncounted = hybrid::tensor_replicated_parameters(*micro_->model());
    if (tied_) {
      for (const auto& name : tied_->names()) {
        if (!tied_->counts(name)) norm.uncounted.push_back(micro_->model()->named_parameters()[name]);
      }
    }
    sync_->set_split_model_norm(std::move(norm));
  }
  sync_->start();  // 8. DDP broadcasts the restored weights
  micro_->attach(*sync_);
  if (config.checkpoint.async) async_.emplace();
  if (!config.activation_checkpointing.empty()) recompute_.emplace(config.activation_checkpointing);
  // Checkpointing outermost: a recomputed layer gathers its parameters again.
  regions_.emplace(std::vector<amp::RegionRunner*>{recompute_ ? &*recompute_ : nullptr, sync_->gathering()});
  if (config.profiler.memory && place_.device.type() == c10::DeviceType::CPU) {
    memory::install_cpu_tracking_allocator();
  }
  log_window_.emplace(start_.step);
  report_.emplace(config, place_.rank == 0, plan_.total_steps);
  report_->run_start(start_.step, world_->size(), config_text_);
  print_opening();
  tools_.emplace(StepTools{loader_, *prof_, *sync_, finite_loss_, scaler_, plan_.precision,
                           recompute_ ? &*recompute_ : nullptr, regions_->empty() ? nullptr : &*regions_,
                           place_.placements, place_.device, world_->options().flight_recorder.get(),
                           world_->rank()});
  check_memory();  // 9. one agreement: does every rank fit?
}

void TrainRun::explain_skips(int64_t step, bool stepped) {
  constexpr int64_t kSkipRun = 5;     // skips in a row before a trace (the scale is then 32x lower)
  constexpr int64_t kMaxTraces = 3;   // per run: a scale that never recovers is named a few times, not each step
  skip_run_ = stepped ? 0 : skip_run_ + 1;
  if (skip_run_ != kSkipRun || traces_ >= kMaxTraces) return;
  ++traces_;
  const std::string why = micro_->explain_skipped_steps(step, *tools_, skip_run_, scaler_.get_scale());
  if (why.empty()) return;
  std::fprintf(stderr, "paisoar: %s\n", why.c_str());
  std::fflush(stderr);
}

void TrainRun::report_skipped_samples(int64_t step, TrainResult& result) {
  constexpr double kWarnShare = 0.01;  // more than 1% of the samples bad: say the data set looks damaged
  // Every rank of a replica reads the same samples: its first rank counts them.
  const bool counts = place_.placements.at().pipeline == 0 && place_.placements.at().tensor == 0;
  const data::LoaderStats& stats = loader_.stats();
  auto n = torch::tensor({counts ? static_cast<double>(stats.skipped) : 0.0,
                          counts ? static_cast<double>(stats.samples + stats.skipped) : 0.0},
                         torch::kDouble);
  world_->allreduce(n).wait();
  result.skipped_samples = n[0].item<int64_t>();
  result.read_samples = n[1].item<int64_t>();
  report_->skipped_samples(step, result.skipped_samples, result.read_samples, stats.skipped_why, kWarnShare);
}

void TrainRun::check_memory() {
  // Not predicted where a forward talks to other ranks (a stage, a tensor
  // shard, gathered parameters): the probe runs on this rank alone.
  if (!config_.memory.predict || !place_.placements.forward_is_local()) return;
  const int64_t micro = plan_.loader.batch_size;
  const auto began = std::chrono::steady_clock::now();
  std::string over, skipped;
  try {
    if (place_.device.is_cpu()) memory::install_cpu_tracking_allocator();
    torch::nn::Module& model = *micro_->model();
    const LossFn loss = loss_of(task_);
    const auto [data, labels] = first_samples(*task_.train_data, micro, place_.device);
    amp::RegionRunner* recompute = recompute_ ? &*recompute_ : nullptr;
    const auto measure = [&](int64_t n, amp::RegionRunner* runner) {
      return measure_step_bytes(model, task_.forward, loss, data.narrow(0, 0, n), labels.narrow(0, 0, n),
                                plan_.precision, runner, place_.device);
    };
    MemoryLayout layout{config_.optimizer.name, config_.optimizer.momentum, place_.placements,
                        std::max<int64_t>(0, measure_optimizer_step_bytes(model, config_.optimizer, place_.device))};
    const int64_t step_bytes = measure(data.size(0), recompute);
    if (step_bytes < 0) {
      skipped = "this device's allocations are not counted";
    } else {
      const MemoryPrediction predicted = predict_memory(model, layout, step_bytes);
      predicted_peak_bytes_ = predicted.total();
      const int64_t budget = memory_budget_bytes(config_.memory, place_.device, place_.ranks_per_node, predicted.parameters);
      if (place_.rank == 0) {
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count();
        report_->message("memory: predicted peak per rank " + describe_prediction(predicted, data.size(0)) +
                         (budget > 0 ? ", budget " + std::to_string(budget / (1 << 20)) + " MiB" : std::string()) +
                         " (measured in " + std::to_string(static_cast<int64_t>(ms + 0.5)) + " ms)");
      }
      if (budget > 0 && predicted.total() > budget) {
        std::vector<MemoryFix> fixes;
        // Sharding more over the data ranks, as long as the forward stays local (predictable).
        for (auto more = place_.placements.sharding().more(); more && place_.data_world > 1; more = more->more()) {
          MemoryLayout sharded = layout;
          sharded.placements = place_.placements.with(*more);
          if (!sharded.placements.forward_is_local()) break;
          fixes.push_back({"zero.stage: " + std::to_string(more->stage()), predict_memory(model, sharded, step_bytes),
                           micro});
        }
        if (!recompute_) {
          memory::CheckpointRegions every({"*"});
          const int64_t bytes = measure(data.size(0), &every);
          if (!every.seen().empty()) {
            fixes.push_back({"activation_checkpointing: [\"*\"]", predict_memory(model, layout, bytes), micro});
          }
        }
        for (int64_t k = 2; k <= 8 && micro % k == 0; k *= 2) {
          fixes.push_back({"train.grad_accumulation: " + std::to_string(plan_.accumulation * k),
                           predict_memory(model, layout, measure(micro / k, recompute)), micro / k});
        }
        over = over_budget_message(place_.rank, predicted, data.size(0), budget, fixes);
      }
    }
  } catch (const std::exception& e) {
    skipped = "probing one micro-batch on this rank failed: " + error_text(e);  // the cause quoted after our words
  }
  if (!skipped.empty() && place_.rank == 0) report_->message("memory: not predicted (" + skipped + ")");
  if (comm::any_rank(world_, !over.empty())) {
    throw ConfigError(!over.empty() ? over : "memory: another rank's predicted peak is over its budget "
                                             "(memory.budget_mb); its error names the changes that fit");
  }
}

void TrainRun::print_opening() {
  if (!start_.path.empty()) report_->message("resumed from " + start_.path + " at step " + std::to_string(start_.step));
  if (place_.placements.holds_part()) {
    const std::string cut = micro_->describe_cut();
    report_->message("parallel: " + place_.placements.describe() + (cut.empty() ? "" : ", " + cut));
  }
  const std::string plan = micro_->cut_plan();
  if (!plan.empty()) report_->message(plan);
  if (config_.profiler.trace_start_step >= 0) {
    std::error_code ec;
    std::filesystem::create_directories(config_.run_dir, ec);
  }
  prof_.emplace(plan_.profiler);
  report_->message(header_line(config_, plan_, task_.train_data->size(), place_.placements));
  report_->message("paisoar train: precision " + plan_.precision.name + ": " + plan_.precision.reason);
}

int64_t TrainRun::begin_epoch(int64_t epoch, int64_t step) {
  const int64_t first_batch = epoch == start_.loader.epoch ? start_.loader.batch : 0;
  loader_.start_epoch(epoch, first_batch);
  report_->begin_epoch(epoch, std::min(plan_.steps_per_epoch - first_batch / plan_.accumulation,
                                       plan_.total_steps - step));
  return first_batch / plan_.accumulation;
}

StepOutcome TrainRun::step(int64_t step, bool logged) {
  profiler::StepProfiler& prof = *prof_;
  prof.begin_step(step);
  if (tools_->flight) tools_->flight->set_activity(util::Activity::Other, step);
  std::optional<memory::PeakMeter> meter;
  if (config_.profiler.memory) meter.emplace(place_.device);
  sync_->zero_grad();
  const StepOutcome outcome = micro_->run(step, *tools_);
  // A skipped step is skipped on every rank (the finite-loss vote is over the world).
  if (tied_ && !outcome.skip) tied_->sum_gradients([this](const std::string& n) { return sync_->held_gradients(n); });
  const auto& reducer_stats = sync_->last_stats();
  prof.add(profiler::Phase::Communication, reducer_stats.exposed_comm_s, profiler::Phase::Backward);
  profiler::add_bucket_spans(prof, reducer_stats.bucket_spans);
  {
    auto timed = tools_->phase(profiler::Phase::Optimizer);
    torch::optim::Optimizer& optimizer = sync_->optimizer();
    grad_norm_ = -1;
    if (outcome.skip) {
      sync_->zero_grad();  // no update: the step's gradients are dropped on every rank
      ++stats_.skipped_steps;
    } else {
      if (config_.optimizer.clip_grad_norm > 0) {
        scaler_.unscale_(optimizer);
        grad_norm_ = sync_->clip_grad_norm(config_.optimizer.clip_grad_norm);
      } else if (logged) {
        // Only measured (collective under ZeRO or model parallelism; logged steps are the same on every rank).
        grad_norm_ = sync_->clip_grad_norm(std::numeric_limits<double>::infinity(), scaler_.get_scale());
      }
      const bool stepped = scaler_.step(optimizer);
      if (!stepped) ++stats_.skipped_steps;
      scaler_.update();
      explain_skips(step, stepped);
    }
    schedule_->step();
  }
  // The run's first step allocates the optimizer's state, counted apart:
  // the peak of a step is taken from the steps after it (when there are any).
  if (meter && (step > start_.step || plan_.total_steps - start_.step == 1)) {
    stats_.peak_step_bytes = std::max(stats_.peak_step_bytes, meter->peak_above_start());
  }
  if (plan_.scaler.enabled) stats_.loss_scales.push_back(scaler_.get_scale());
  prof.end_step();
  return outcome;
}

void TrainRun::log_step(int64_t epoch, int64_t step, const EpochTally& tally, double train_s) {
  const double elapsed = train_s - tally.train_start_s;
  const auto& stats = sync_->last_stats();
  StepLog log;
  log.epoch = epoch;
  log.step = step;
  log.lr = schedule_->get_last_lr()[0];
  log.ms_per_step = 1e3 * elapsed / tally.steps;
  log.samples_per_s = config_.train.batch_size * tally.steps / std::max(elapsed, 1e-9);
  log.data_wait_ms = 1e3 * tally.wait_sum / (tally.steps * plan_.accumulation);
  log.backward_ms = 1e3 * stats.backward_s;
  log.exposed_comm_ms = 1e3 * stats.exposed_comm_s;
  log.loss_scale = scaler_.get_scale();
  log.grad_norm = grad_norm_;
  log_window_->close(*world_, *prof_, step, train_s, stats.exposed_comm_s, place_.device, tally.mean_loss(),
                    log);  // collective
  report_->log_step(log);
}

std::function<double()> TrainRun::evaluation() {
  if (!task_.eval_data) return nullptr;
  EvalRole role;
  role.index = place_.data_rank;
  role.count = place_.data_world;
  role.counts = place_.placements.counts_outputs(micro_->holds_logits());
  role.forward = micro_->eval_forward();
  role.regions = sync_->gathering();
  role.on_error = plan_.loader.on_error;
  return [this, role] {
    comm::ActivityScope evaluating(tools_->flight, util::Activity::Evaluation);
    return evaluate(task_, *world_, role, config_.data.workers, plan_.precision, config_.data.eval_limit);
  };
}

TrainResult TrainRun::finish(int64_t step, double final_loss, EvalSchedule& evals) {
  if (saved_step_ != step) save(step);
  if (async_) {
    comm::ActivityScope saving(tools_->flight, util::Activity::Checkpoint);
    async_->wait();  // the last save is on disk when fit() returns; its error is thrown here
  }
  if (!stats_.save_wait_s.empty()) {
    std::vector<double> waits = stats_.save_wait_s;
    std::nth_element(waits.begin(), waits.begin() + waits.size() / 2, waits.end());
    char line[200];
    std::snprintf(line, sizeof line, "checkpoints: %zu saved while training; the step waited %.1f ms per save "
                  "(median)%s", waits.size(), 1e3 * waits[waits.size() / 2],
                  async_ ? ", for the copy to host memory (checkpoint.async)" : "");
    report_->message(line);
  }
  evals.score_if_unscored();
  TrainResult result;
  report_skipped_samples(step, result);
  result.resumed_from = start_.path;
  result.final_loss = final_loss;
  result.accuracy = evals.accuracy();
  result.time_to_target_s = evals.time_to_target_s();
  result.steps = step - start_.step;
  result.global_step = step;
  result.predicted_peak_bytes = predicted_peak_bytes_;
  result.seconds = evals.seconds();
  if (config_.profiler.enabled && result.steps > 0) {
    result.pipeline_bubble = micro_->report_stages(*report_, *world_);
    report_profile(*report_, *world_, step, *prof_, stats_, plan_.precision.autocast.enabled,
                   fast_precision_on(place_.device.type()), !place_.placements.holds_part());
  }
  if (config_.profiler.memory) {
    const memory::MemoryReport mine = sync_->measure_memory(static_cast<int>(place_.rank), place_.device);
    if (stats_.peak_step_bytes >= 0) {
      result.measured_peak_bytes =
          mine.parameter_bytes + mine.gradient_bytes + mine.optimizer_state_bytes + stats_.peak_step_bytes;
    }
    report_memory(*report_, *world_, step, mine, stats_);
  }
  sync_->finish();
  const double trained = evals.train_seconds();
  result.samples_per_s = trained > 0 ? config_.train.batch_size * result.steps / trained : 0;
  report_->summary(result, config_.eval.target_accuracy);
  return result;
}

}  // namespace paisoar::train
