// CheckpointPolicy: which modules to checkpoint, by module-name pattern (the
// config's `activation_checkpointing: [patterns]`). Patterns are the globs of
// amp::PrecisionPolicy over dotted module paths ("blocks.*", "layer?"; `*` also
// matches dots).
#pragma once

#include <torch/nn/modules/container/sequential.h>

#include <string>
#include <vector>

#include "paisoar/memory/activation_checkpoint.h"

namespace paisoar::memory {

class CheckpointPolicy {
 public:
  // Throws c10::ValueError for an empty pattern.
  explicit CheckpointPolicy(std::vector<std::string> patterns, ActivationCheckpointOptions options = {});

  bool matches(const std::string& module_name) const;
  bool empty() const { return patterns_.empty(); }
  const std::vector<std::string>& patterns() const { return patterns_; }

  // A copy of `model` in which every child whose dotted path (`prefix.name`)
  // matches is wrapped in Checkpointed (the same rewrite PrecisionPolicy::apply
  // does). Parameters stay shared and state_dict keys unchanged. Throws
  // c10::ValueError if a pattern matches no child, naming the pattern and
  // listing the children's paths.
  torch::nn::Sequential apply(const torch::nn::Sequential& model, const std::string& prefix = "") const;

  // For hand-written forward(): module->forward(x), checkpointed when
  // `module_name` matches.
  //   x = policy.run("blocks." + std::to_string(i), blocks[i], x);
  template <typename ModulePtr>
  torch::Tensor run(const std::string& module_name, const ModulePtr& module, const torch::Tensor& x) const {
    return matches(module_name) ? checkpointed(module, x, options_) : module->forward(x);
  }

 private:
  std::vector<std::string> patterns_;
  ActivationCheckpointOptions options_;
};

}  // namespace paisoar::memory
