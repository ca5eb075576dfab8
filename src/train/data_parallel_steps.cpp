// DataParallelSteps: per micro-batch, set_sync (on for the last), pre_forward,
// the forward under the precision context, post_forward, the finite-loss
// vote, the scaled backward; DDP and ZeRO pair their collectives in this order.
#include "src/train/data_parallel_steps.h"

#include "src/train/region_checks.h"

namespace paisoar::train {

DataParallelSteps::DataParallelSteps(const TrainTask& task, int64_t accumulation, const amp::PrecisionPolicy& policy,
                                     bool checkpointing)
    : task_(task),
      loss_(loss_of(task)),
      accumulation_(accumulation),
      policy_checked_(policy.empty()),
      checkpointing_checked_(!checkpointing) {}

StepOutcome DataParallelSteps::run(int64_t step, StepTools& t) {
  StepOutcome outcome;
  const auto parts = static_cast<double>(accumulation_);
  for (int64_t micro = 0; micro < accumulation_; ++micro) {
    data::Batch batch = next_batch(t, step);
    outcome.wait_s += batch.wait_s;
    batch.data = batch.data.to(t.device, /*non_blocking=*/true);
    batch.labels = batch.labels.to(t.device, /*non_blocking=*/true);
    t.sync.set_sync(micro + 1 == accumulation_);
    torch::Tensor out, loss;
    {
      auto timed = t.phase(profiler::Phase::Forward);
      t.sync.pre_forward();
      PrecisionContext precision(t.precision, t.recompute);
      out = task_.forward(batch.data);
      loss = loss_(out, batch.labels);
      if (!policy_checked_) {
        check_policy_matched(t.precision.policy, precision.regions_seen());
        policy_checked_ = true;
      }
      if (!checkpointing_checked_) {
        check_checkpointing_matched(*t.recompute);
        checkpointing_checked_ = true;
      }
    }
    t.sync.post_forward({out});
    if (!t.finite_loss(loss, step)) {
      outcome.skip = true;  // the rest of the step's micro-batches are dropped with it
      break;
    }
    {
      auto timed = t.phase(profiler::Phase::Backward);
      t.scaler.scale(loss / parts).backward();
    }
    outcome.loss += loss.item<double>() / parts;
  }
  return outcome;
}

}  // namespace paisoar::train
