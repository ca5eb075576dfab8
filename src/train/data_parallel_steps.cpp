// DataParallelSteps: per micro-batch, set_sync (on for the last), pre_forward,
// the forward under the precision context, post_forward, the finite-loss
// vote, the scaled backward; DDP and ZeRO pair their collectives in this order.
// A non-finite loss is traced (non_finite_source.h) on the rank that saw it.
#include "src/train/data_parallel_steps.h"

#include <cstdio>

#include "src/diagnosis/non_finite_source.h"
#include "src/config/region_checks.h"

namespace paisoar::train {

DataParallelSteps::DataParallelSteps(const TrainTask& task, int64_t accumulation, const amp::PrecisionPolicy& policy,
                                     bool checkpointing)
    : task_(task),
      loss_(loss_of(task)),
      accumulation_(accumulation),
      policy_checked_(policy.empty()),
      checkpointing_checked_(!checkpointing) {}

std::string DataParallelSteps::explain_non_finite(StepTools& t, int64_t step, int64_t micro,
                                                  const torch::Tensor& loss, const data::Batch& batch) const {
  if (torch::isfinite(loss.detach()).all().item<bool>()) return "";  // another rank's
  if (!t.placements.forward_is_local()) {
    return "rank " + std::to_string(t.rank) + ", step " + std::to_string(step) +
           ": the loss is not finite (not traced to a region: this rank's forward gathers its parameters from "
           "the others under zero.stage 3; rerun with zero.stage 2 to find it)";
  }
  try {
    const NonFiniteSource source =
        find_non_finite_source(*task_.model, task_.forward, loss_, batch.data, batch.labels, t.precision);
    return non_finite_advice(source, t.rank, step, micro, batch.indices);
  } catch (const std::exception& e) {
    return "rank " + std::to_string(t.rank) + ", step " + std::to_string(step) +
           ": the loss is not finite; re-running the micro-batch to find where failed: " + e.what();
  }
}

bool DataParallelSteps::agree_finite(StepTools& t, int64_t step, int64_t micro, const torch::Tensor& loss,
                                     const data::Batch& batch) {
  try {
    if (t.finite_loss(loss, step)) return true;
  } catch (const amp::NonFiniteLossError& e) {
    const std::string why = explain_non_finite(t, step, micro, loss, batch);
    if (why.empty()) throw;
    throw amp::NonFiniteLossError(std::string(e.what_without_backtrace()) + "\n" + why, e.step());
  }
  const std::string why = explain_non_finite(t, step, micro, loss, batch);
  if (!why.empty()) {
    std::fprintf(stderr, "paisoar: non-finite loss skipped: %s\n", why.c_str());
    std::fflush(stderr);
  }
  return false;
}

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
      PrecisionContext precision(t.precision, t.regions);
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
    if (!agree_finite(t, step, micro, loss, batch)) {
      outcome.skip = true;  // the rest of the step's micro-batches are dropped with it
      break;
    }
    {
      auto timed = t.phase(profiler::Phase::Backward);
      t.scaler.scale(loss / parts).backward();
    }
    outcome.loss += loss.item<double>() / parts;
    if (t.precision.scales_loss()) last_batch_ = batch;  // references, no copy
  }
  return outcome;
}

std::string DataParallelSteps::explain_skipped_steps(int64_t step, StepTools& t, int64_t skipped, double scale) {
  if (!last_batch_.data.defined() || !t.placements.forward_is_local()) return "";
  try {
    const auto source = find_non_finite_gradient_source(*task_.model, task_.forward, loss_, last_batch_.data,
                                                        last_batch_.labels, t.precision, scale);
    if (!source.reproduced && t.rank != 0) return "";  // the lead says it once
    return non_finite_gradient_advice(source, t.rank, step, skipped, scale, last_batch_.indices);
  } catch (const std::exception& e) {
    return "rank " + std::to_string(t.rank) + ", step " + std::to_string(step) + ": the loss scaler skipped " +
           std::to_string(skipped) + " steps in a row; re-running the last micro-batch to find why failed: " + e.what();
  }
}

}  // namespace paisoar::train
