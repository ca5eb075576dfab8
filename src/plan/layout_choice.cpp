// LayoutChoice's overrides and the enumeration of a world's layouts, each
// checked by the same validate() and check_reference_layout() that `paisoar
// train` runs, so a layout offered is one training takes.
#include "paisoar/plan/layout_choice.h"

#include "paisoar/error.h"
#include "paisoar/train/zoo.h"

namespace paisoar::plan {

std::vector<std::string> LayoutChoice::overrides() const {
  const bool piped = ranks.pipeline > 1;
  return {"parallel.data=" + std::to_string(ranks.data),
          "parallel.pipeline=" + std::to_string(ranks.pipeline),
          "parallel.tensor=" + std::to_string(ranks.tensor),
          "parallel.micro_batches=" + std::to_string(piped ? micro_batches : 1),
          "train.grad_accumulation=" + std::to_string(piped ? 1 : micro_batches),
          "zero.stage=" + std::to_string(zero_stage),
          std::string("activation_checkpointing=") + (checkpointing ? "[\"*\"]" : "[]")};
}

train::TrainConfig LayoutChoice::apply(const train::TrainConfig& config) const {
  train::TrainConfig c = config;
  const bool piped = ranks.pipeline > 1;
  c.parallel.automatic = false;
  c.parallel.data = ranks.data;
  c.parallel.pipeline = ranks.pipeline;
  c.parallel.tensor = ranks.tensor;
  c.parallel.micro_batches = piped ? micro_batches : 1;
  c.train.grad_accumulation = piped ? 1 : micro_batches;
  c.zero.stage = zero_stage;
  c.activation_checkpointing = checkpointing ? std::vector<std::string>{"*"} : std::vector<std::string>{};
  return c;
}

std::string LayoutChoice::to_string() const {
  std::string text = ranks.to_string() + ", ZeRO " + std::to_string(zero_stage) + ", " +
                     std::to_string(micro_batches) + (micro_batches == 1 ? " micro-batch" : " micro-batches");
  return checkpointing ? text + ", checkpointing" : text;
}

Candidates enumerate_layouts(const train::TrainConfig& config, int world_size) {
  Candidates out;
  for (int tensor = 1; tensor <= world_size; ++tensor) {
    if (world_size % tensor != 0) continue;
    for (int pipeline = 1; pipeline <= world_size / tensor; ++pipeline) {
      if ((world_size / tensor) % pipeline != 0) continue;
      const int data = world_size / (tensor * pipeline);
      const int max_zero = data > 1 ? 3 : 0;
      for (int zero = 0; zero <= max_zero; ++zero) {
        for (int64_t per_stage : {1, 2}) {
          for (bool checkpointing : {false, true}) {
            LayoutChoice l;
            l.ranks = {data, pipeline, tensor};
            l.zero_stage = zero;
            l.micro_batches = per_stage * pipeline;
            l.checkpointing = checkpointing;
            try {
              const train::TrainConfig c = l.apply(config);
              train::check_reference_layout(c);  // the model's limit first: it holds for every batch
              train::validate(c, world_size);
              out.layouts.push_back(l);
            } catch (const train::ConfigError& e) {
              out.dropped.push_back({l, error_text(e)});
            }
          }
        }
      }
    }
  }
  return out;
}

}  // namespace paisoar::plan
