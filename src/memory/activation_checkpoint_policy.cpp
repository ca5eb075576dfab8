// CheckpointPolicy: glob patterns over module paths, applied with the
// Sequential rewrite shared with amp::PrecisionPolicy.
#include "paisoar/memory/activation_checkpoint_policy.h"

#include <c10/util/Exception.h>

#include <stdexcept>

#include "paisoar/amp/precision.h"
#include "src/util/module_wrap.h"

namespace paisoar::memory {

CheckpointPolicy::CheckpointPolicy(std::vector<std::string> patterns, ActivationCheckpointOptions options)
    : patterns_(std::move(patterns)), options_(options) {
  for (const auto& p : patterns_) {
    if (p.empty()) {
      C10_THROW_ERROR(ValueError, 
          "activation checkpointing: empty module-name pattern; use a glob over module paths "
          "such as \"blocks.*\"");
    }
  }
}

bool CheckpointPolicy::matches(const std::string& module_name) const {
  for (const auto& p : patterns_) {
    if (amp::glob_match(p, module_name)) return true;
  }
  return false;
}

torch::nn::Sequential CheckpointPolicy::apply(const torch::nn::Sequential& model,
                                              const std::string& prefix) const {
  std::vector<bool> used(patterns_.size(), false);
  std::vector<std::string> paths;
  auto out = paisoar::detail::rewrite_children(
      model, prefix,
      [&](const std::string& path,
          const torch::nn::AnyModule& child) -> std::optional<torch::nn::AnyModule> {
        paths.push_back(path);
        bool hit = false;
        for (size_t i = 0; i < patterns_.size(); ++i) {
          if (amp::glob_match(patterns_[i], path)) used[i] = hit = true;
        }
        if (!hit) return std::nullopt;
        return torch::nn::AnyModule(Checkpointed(child, options_));
      });
  for (size_t i = 0; i < patterns_.size(); ++i) {
    if (used[i]) continue;
    std::string names;
    for (const auto& p : paths) names += (names.empty() ? "" : ", ") + p;
    C10_THROW_ERROR(ValueError, "activation checkpointing: pattern '" + patterns_[i] +
                                "' matches no module; the modules are: " +
                                (names.empty() ? "(none: the Sequential is empty)" : names));
  }
  return out;
}

}  // namespace paisoar::memory
