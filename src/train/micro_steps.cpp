// The pieces every MicroSteps implementation shares: the default loss and
// reading a micro-batch.
#include "src/train/micro_steps.h"

#include <c10/util/Exception.h>

#include <torch/torch.h>

#include <optional>
#include <stdexcept>

namespace paisoar::train {

LossFn loss_of(const TrainTask& task) {
  if (task.loss) return task.loss;
  return [](const torch::Tensor& out, const torch::Tensor& y) { return torch::cross_entropy_loss(out, y); };
}

data::Batch MicroSteps::next_batch(StepTools& tools) {
  std::optional<data::Batch> batch;
  {
    auto timed = tools.prof.phase(profiler::Phase::DataWait);
    batch = tools.loader.next();
  }
  if (!batch) C10_THROW_ERROR(Error, "Trainer: the loader ran out of batches within a step");
  return std::move(*batch);
}

}  // namespace paisoar::train
