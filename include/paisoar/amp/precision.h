// Precision pinning for what LibTorch's autocast lists do not cover (your own
// modules and ops): run a region in full precision or in the low precision,
// with its floating inputs cast to match. PrecisionScope is the primitive;
// Pinned wraps a module; PrecisionPolicy picks pins by module-name pattern.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/modules/container/sequential.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "paisoar/amp/autocast.h"

namespace paisoar::amp {

enum class Precision {
  Inherit,  // whatever the surrounding region does
  Full,     // fp32: autocast off, floating inputs cast to float32
  Low,      // autocast on with the device's autocast dtype (bf16 on CPU),
            // floating inputs cast to it, even for ops autocast does not list
};

// "inherit", "fp32"/"full", "low"/"bf16"/"fp16"; throws c10::ValueError
// naming the text otherwise.
Precision parse_precision(const std::string& text);
const char* to_string(Precision precision);

// Runs the enclosing C++ scope at `precision` on `device` (per thread, like
// autocast). Pins are explicit: Low turns autocast on even where it was off.
class PrecisionScope {
 public:
  explicit PrecisionScope(Precision precision, c10::DeviceType device = c10::DeviceType::CPU);
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

  // `x` cast to the scope's dtype when it is floating point and the scope pins
  // one; otherwise `x` unchanged (integer tensors, Inherit). Differentiable.
  torch::Tensor cast(const torch::Tensor& x) const;

 private:
  std::optional<c10::ScalarType> cast_to_;
  std::optional<autocast> guard_;
};

// A module run at a pinned precision. Transparent: the wrapped module's
// parameters, buffers and children are registered under their own names, so
// state_dict keys and optimizers see exactly the wrapped module's.
class PinnedImpl : public torch::nn::Module {
 public:
  // The pin applies on the device of forward()'s input.
  PinnedImpl(torch::nn::AnyModule module, Precision precision);

  torch::Tensor forward(torch::Tensor x);
  void train(bool on = true) override;
  void pretty_print(std::ostream& stream) const override;

  Precision precision() const { return precision_; }
  const torch::nn::AnyModule& module() const { return module_; }

 private:
  torch::nn::AnyModule module_;
  Precision precision_;
};
TORCH_MODULE(Pinned);

// Module-name patterns -> precision; the first matching rule wins, names that
// no rule matches are Inherit. Patterns are globs over dotted module paths
// ("head", "*.norm", "blocks.?.mlp"); `*` also matches dots.
class PrecisionPolicy {
 public:
  PrecisionPolicy() = default;

  // From a YAML mapping of precision to pattern list, e.g.
  //   fp32: [head, "*.norm"]
  //   low: ["blocks.*.mlp"]
  // Throws c10::ValueError naming the bad key or value.
  static PrecisionPolicy from_yaml(const std::string& yaml_text);

  PrecisionPolicy& add(std::string pattern, Precision precision);
  Precision precision_for(const std::string& module_name) const;
  bool empty() const { return rules_.empty(); }
  const std::vector<std::pair<std::string, Precision>>& rules() const { return rules_; }

  // A copy of `model` in which every child whose dotted path (`prefix.name`)
  // matches a rule is wrapped in Pinned. The copy shares parameters with
  // `model`, keeps its state_dict keys, and requires single-tensor forward()
  // in the children it wraps. A container nested inside (LibTorch nests
  // Sequentials only as subclasses) is rewritten by calling apply on it with
  // its path as `prefix`.
  torch::nn::Sequential apply(const torch::nn::Sequential& model,
                              const std::string& prefix = "") const;

  // For hand-written forward(): `auto pin = policy.scope("head"); x = head(pin.cast(x));`
  // C++ cannot reroute calls to a module member, so the code names the region
  // and the policy (from config) decides its precision.
  PrecisionScope scope(const std::string& module_name,
                       c10::DeviceType device = c10::DeviceType::CPU) const {
    return PrecisionScope(precision_for(module_name), device);
  }

 private:
  std::vector<std::pair<std::string, Precision>> rules_;
};

// Whether `name` matches the glob `pattern` (`*` any run, `?` one character).
bool glob_match(const std::string& pattern, const std::string& name);

}  // namespace paisoar::amp
