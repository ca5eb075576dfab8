// Trainer::fit: the epoch and step loop over a TrainRun's parts. Rank 0
// prints and writes metrics; every rank runs the same number of steps (the
// sampler pads), so the collectives of DDP, ZeRO and a pipeline pair up.
#include "paisoar/train/trainer.h"

#include <c10/util/Exception.h>

#include <iostream>

#include <torch/torch.h>

#include "paisoar/comm/communicator.h"
#include "paisoar/comm/progress_board.h"
#include "paisoar/hybrid/hybrid_mesh.h"
#include "paisoar/plan/auto_layout.h"
#include "src/train/eval_schedule.h"
#include "src/train/train_run.h"
#include "src/util/heartbeat.h"

namespace paisoar::train {

namespace {

// parallel: auto: the planner's choice for this world (rank 0's, on every rank).
TrainConfig planned(TrainConfig config, comm::Communicator* comm, const RunEnvironment& run) {
  if (!comm) C10_THROW_ERROR(ValueError, "Trainer: the communicator is null");
  // Ranks as threads of one process (no launcher's variables): one node.
  const int per_node = run.job.world_size == comm->size() ? run.job.local_world_size : comm->size();
  return plan::choose_layout(config, *comm, per_node, run.plan_cache, run.node_cpus, std::cout);
}

}  // namespace

Trainer::Trainer(TrainConfig config, std::shared_ptr<comm::Communicator> comm, RunEnvironment run)
    : config_(planned(std::move(config), comm.get(), run)), comm_(std::move(comm)), run_(std::move(run)) {
  validate(config_, comm_->size());
  const hybrid::ParallelLayout layout = parallel_layout(config_, comm_->size());
  if (layout.model_parallel()) mesh_ = std::make_shared<hybrid::HybridMesh>(comm_, layout);
}

Trainer::~Trainer() = default;

std::shared_ptr<comm::Communicator> Trainer::tensor_group() const {
  return mesh_ ? mesh_->tensor_group() : nullptr;
}

std::string Trainer::reshard(const TrainTask& task, const std::string& target_dir) {
  TORCH_CHECK_VALUE(config_.checkpoint.resume, "Trainer::reshard: checkpoint.resume is off; it reads the newest "
                    "checkpoint of checkpoint.dir");
  RunEnvironment reading = run_;
  reading.checkpoints_read_only = true;  // the source is never changed, not even its lock file
  TrainRun run(config_, task, comm_, mesh_.get(), reading);  // collective: resumed into this layout
  TORCH_CHECK(!run.start().path.empty(), "reshard: checkpoint.dir '", run.plan().checkpoint.dir,
              "' holds no checkpoint (step-<12 digits>.safetensors) to reshard");
  return run.save_as(target_dir);
}

TrainResult Trainer::fit(const TrainTask& task) {
  TrainRun run(config_, task, comm_, mesh_.get(), run_);  // collective: every part built, resumed
  const RunPlan& plan = run.plan();
  comm::ProgressBoard progress(comm_);  // names the ranks behind when a collective times out
  util::Heartbeat heartbeat(run_.heartbeat_file);  // for the launcher's watchdog (--heartbeat_timeout)
  EvalSchedule evals(config_.eval, run.evaluation(), run.report(), heartbeat);  // starts the clock
  int64_t step = run.start().step;
  double final_loss = 0;  // the last epoch's mean
  const auto more = [&] { return step < plan.total_steps && !evals.stop(); };
  try {
    for (int64_t epoch = run.start().loader.epoch; epoch < config_.train.epochs && more(); ++epoch) {
      const int64_t first = run.begin_epoch(epoch, step);
      EpochTally tally(evals.train_seconds());
      if (epoch == run.start().loader.epoch) tally.carry(run.start().epoch_loss_sum, run.start().epoch_steps);
      for (int64_t i = first; i < plan.steps_per_epoch && more(); ++i) {
        progress.post(step);
        heartbeat.beat();
        const bool epoch_end = i + 1 == plan.steps_per_epoch || step + 1 == plan.total_steps;
        const bool logged = run.report().log_due(step + 1, epoch_end);
        tally.add(run.step(step, logged));
        ++step;
        run.save_if_due(step, tally);
        if (task.on_step) task.on_step(step);
        run.report().step_done();
        if (logged) run.log_step(epoch, step, tally, evals.train_seconds());
        evals.after_step(epoch, step);
      }
      run.report().end_epoch();
      final_loss = tally.mean_loss();
      evals.after_epoch(epoch, step, epoch + 1 == config_.train.epochs || !more());
    }
  } catch (const comm::CommError& e) {
    throw progress.explain(e, step);
  }
  return run.finish(step, final_loss, evals);
}

}  // namespace paisoar::train
