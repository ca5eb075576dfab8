// Pipeline::infer: one forward through the stages without gradients, for
// evaluation. Like step(), a failed stage passes its error on instead of an
// activation, and one agreement at the end makes every rank throw or none.
#include <torch/torch.h>

#include <optional>

#include "paisoar/pipeline/pipeline.h"
#include "paisoar/error.h"
#include "src/pipeline/link_shapes.h"
#include "src/pipeline/stage_link.h"
#include "src/pipeline/stage_text.h"
#include "src/pipeline/step_outcome.h"

namespace paisoar::pipeline {

torch::Tensor Pipeline::infer(const torch::Tensor& input) {
  torch::NoGradGuard no_grad;
  detail::begin_exchange(*links_, description_);
  std::string error;
  std::optional<detail::Inbox> from_prev;
  if (!is_first()) {
    from_prev.emplace(group_, stage_ - 1, detail::Channel::Activation, 1, detail::stage_device(*module_));
  }
  torch::Tensor x;
  if (is_first()) {
    x = input;
    if (!x.defined()) error = description_ + " failed in infer(): the input is undefined; pass it on the first stage";
  } else {
    detail::Message msg = from_prev->take();
    if (msg.failed) error = msg.error;
    x = msg.tensor;
  }
  torch::Tensor y;
  if (error.empty()) {
    try {
      y = module_->forward(x);
    } catch (const std::exception& e) {
      error = description_ + " failed in infer() on an input of shape " + detail::describe(x) + ": " +
              error_text(e);
    }
  }
  if (error.empty() && !is_last()) {
    const std::string why = detail::unsendable(y, /*posts_ahead=*/false);
    if (!why.empty()) error = description_ + " failed in infer(): its output " + why;
  }
  detail::Outbox outbox(group_);
  if (!is_last()) {
    error.empty() ? outbox.send_tensor(y, stage_ + 1, detail::Channel::Activation)
                  : outbox.send_error(error, stage_ + 1, detail::Channel::Activation);
  }
  outbox.wait();
  const detail::StepOutcome outcome = detail::agree_on_outcome(*group_, error, 0.0);
  links_->exchanging = false;
  TORCH_CHECK(!outcome.failed, "pipeline inference failed: ", outcome.error);
  return is_last() ? y : torch::Tensor();
}

}  // namespace paisoar::pipeline
