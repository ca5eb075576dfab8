// TrainRun's training state: what a checkpoint holds of the run's parts
// (trainer_state), the resume, and the saves (at a step, in the background,
// or into another directory for a reshard).
#include <torch/torch.h>

#include "paisoar/comm/agreement.h"
#include "src/train/train_run.h"

namespace paisoar::train {

TrainerState TrainRun::trainer_state() {
  TrainerState state{task_.model.get(), &sync_->optimizer(), &*schedule_, &scaler_, sync_->zero(), world_, data_comm_};
  state.config_text = config_text_;
  state.cut = cut_of(place_.placements);
  if (state.cut.split()) {
    // Each rank holds a part: its stage's (shard of the) layers.
    state.model = micro_->model().get();
    state.whole_model = task_.model.get();
    state.cut.bounds = micro_->cut();
  }
  return state;
}

ResumePoint TrainRun::resume() {
  if (!config_.checkpoint.resume) return {};
  std::optional<ResumePoint> point = restore_trainer_state(newest_, state_, batch_shape(), world_);
  if (!point) return {};
  if (point->loader.batch % plan_.accumulation != 0) {
    throw ConfigError("train.grad_accumulation: " + point->path + " stopped at micro-batch " +
                      std::to_string(point->loader.batch) + ", not a step boundary for " +
                      std::to_string(plan_.accumulation) +
                      " micro-batches; resume with the accumulation it was made with");
  }
  return *point;
}

void TrainRun::save_if_due(int64_t step, const EpochTally& tally) {
  progress_.epoch_loss_sum = tally.loss_sum;
  progress_.epoch_steps = tally.loss_steps;
  if (!checkpoints_->due(step)) return;
  const auto start = std::chrono::steady_clock::now();
  if (save(step)) saved_step_ = step;
  stats_.save_wait_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

bool TrainRun::save(int64_t step) {
  comm::ActivityScope saving(tools_->flight, util::Activity::Checkpoint);  // the final save's too
  RunProgress progress = progress_;
  progress.loader = loader_.position();
  // The epoch's loss sum over the global batch (the mean of the ranks'), so a
  // resume on any number of ranks carries the logged mean on.
  auto loss = torch::tensor({progress.epoch_loss_sum}, torch::kDouble);
  world_->allreduce(loss, comm::ReduceOp::Sum).wait();
  progress.epoch_loss_sum = loss.item<double>() / world_->size();
  SaveSnapshot snapshot = capture_save(state_, step, progress, batch_shape(), config_text_);
  if (!async_) return save_checkpoint(*checkpoints_, world_, config_.checkpoint.on_error, snapshot);
  own_tensors(snapshot);  // the step waits only for this copy
  async_->start([this, snapshot = std::move(snapshot)] {
    comm::ThreadActivityScope saving(util::Activity::Checkpoint);  // its waits are a checkpoint's
    save_checkpoint(*checkpoints_, checkpoint_comm_, config_.checkpoint.on_error, snapshot);
  });
  return true;
}

std::string TrainRun::save_as(const std::string& target_dir) {
  checkpoint::CheckpointOptions options = plan_.checkpoint;
  options.dir = target_dir;
  options.rank = place_.rank;
  options.file_system = checkpoints_->options().file_system;
  checkpoint::CheckpointManager target = open_checkpoints(options, world_);  // collective
  RunProgress progress;  // as resumed: the loader's place and the epoch's running loss (the same on every rank)
  progress.loader = start_.loader;
  progress.epoch_loss_sum = start_.epoch_loss_sum;
  progress.epoch_steps = start_.epoch_steps;
  const SaveSnapshot snapshot = capture_save(state_, start_.step, progress, batch_shape(), config_text_);
  save_checkpoint(target, world_, OnCheckpointError::Stop, snapshot);
  return target.path_for(start_.step);
}

BatchShape TrainRun::batch_shape() const {
  return {config_.train.batch_size, plan_.loader.batch_size * place_.data_world, plan_.steps_per_epoch};
}

}  // namespace paisoar::train
