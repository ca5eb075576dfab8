// FiniteLossCheck: the local isfinite test, the cross-rank verdict, and the
// stop-or-skip decision.
#include "paisoar/amp/finite_loss_check.h"

#include <c10/util/Logging.h>
#include <torch/torch.h>

#include "paisoar/comm/agreement.h"
#include "paisoar/comm/communicator.h"

namespace paisoar::amp {

FiniteLossCheck::FiniteLossCheck(FiniteLossCheckOptions options,
                                 std::shared_ptr<comm::Communicator> comm)
    : options_(options), comm_(std::move(comm)) {
  TORCH_CHECK(options_.max_consecutive_skips >= 0,
              "FiniteLossCheckOptions::max_consecutive_skips must be >= 0 (0: never stop), got ",
              options_.max_consecutive_skips);
}

bool FiniteLossCheck::operator()(const at::Tensor& loss, int64_t step) {
  TORCH_CHECK(loss.defined(), "FiniteLossCheck: the loss at step ", step, " is undefined");
  const bool local_bad = !torch::isfinite(loss.detach()).all().item<bool>();
  if (!comm::any_rank(comm_, local_bad)) {
    consecutive_ = 0;
    return true;
  }
  std::string where = local_bad ? "" : " on another rank";
  if (local_bad) {
    where = loss.numel() == 1 ? " (" + std::to_string(loss.detach().item<double>()) + ")" : "";
  }
  const std::string what = "non-finite loss" + where + " at step " + std::to_string(step);
  if (options_.action == OnNonFiniteLoss::Stop) {
    throw NonFiniteLossError(what +
                                 ": stopping. Lower the learning rate, check the input data "
                                 "of this step, or set the action to skip",
                             step);
  }
  ++skipped_steps_;
  ++consecutive_;
  if (options_.max_consecutive_skips > 0 && consecutive_ >= options_.max_consecutive_skips) {
    throw NonFiniteLossError(what + ": " + std::to_string(consecutive_) +
                                 " steps in a row were non-finite, so training is diverging; "
                                 "stopping. Lower the learning rate or restore a checkpoint",
                             step);
  }
  LOG(WARNING) << "paisoar: " << what << ": skipping this step (" << skipped_steps_
               << " skipped so far)";
  return false;
}

}  // namespace paisoar::amp
