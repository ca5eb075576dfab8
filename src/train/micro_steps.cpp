// The pieces every MicroSteps implementation shares: the default loss and
// reading a micro-batch.
#include "src/train/micro_steps.h"

#include <c10/util/Exception.h>

#include <torch/torch.h>

#include "src/util/fault_point.h"

#include <optional>
#include <stdexcept>

namespace paisoar::train {

LossFn loss_of(const TrainTask& task) {
  if (task.loss) return task.loss;
  return [](const torch::Tensor& out, const torch::Tensor& y) { return torch::cross_entropy_loss(out, y); };
}

TimedPhase StepTools::phase(profiler::Phase phase) {
  util::Activity activity = util::Activity::Other;
  switch (phase) {
    case profiler::Phase::DataWait: activity = util::Activity::Data; break;
    case profiler::Phase::Forward: activity = util::Activity::Forward; break;
    case profiler::Phase::Backward: activity = util::Activity::Backward; break;
    case profiler::Phase::Optimizer: activity = util::Activity::Optimizer; break;
    case profiler::Phase::Communication:
    case profiler::Phase::Other: break;
  }
  return TimedPhase{prof.phase(phase), comm::ActivityScope(flight, activity)};
}

data::Batch MicroSteps::next_batch(StepTools& tools, int64_t step) {
  std::optional<data::Batch> batch;
  {
    auto timed = tools.phase(profiler::Phase::DataWait);
    util::fault_point("train.next_batch", step);
    batch = tools.loader.next();
  }
  if (!batch) C10_THROW_ERROR(Error, "Trainer: the loader ran out of batches within a step");
  return std::move(*batch);
}

}  // namespace paisoar::train
