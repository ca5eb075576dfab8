// Precision pins: the scope that sets autocast and casts inputs, the Pinned
// module wrapper, and the name-pattern policy.
#include "paisoar/amp/precision.h"

#include <c10/util/Exception.h>

#include <yaml-cpp/yaml.h>

#include <stdexcept>

#include "src/amp/cast_floating.h"
#include "src/util/module_wrap.h"
#include "src/util/yaml_document.h"

namespace paisoar::amp {

Precision parse_precision(const std::string& text) {
  if (text == "inherit") return Precision::Inherit;
  if (text == "fp32" || text == "full" || text == "float32") return Precision::Full;
  if (text == "low" || text == "bf16" || text == "fp16" || text == "bfloat16" || text == "float16") {
    return Precision::Low;
  }
  C10_THROW_ERROR(ValueError, "unknown precision '" + text +
                              "': use fp32 (or full), low (or bf16/fp16), or inherit");
}

const char* to_string(Precision precision) {
  switch (precision) {
    case Precision::Full: return "fp32";
    case Precision::Low: return "low";
    case Precision::Inherit: break;
  }
  return "inherit";
}

PrecisionScope::PrecisionScope(Precision precision, c10::DeviceType device) {
  if (precision == Precision::Inherit) return;
  AutocastOptions options;
  options.device = device;
  if (precision == Precision::Full) {
    options.enabled = false;
    cast_to_ = c10::ScalarType::Float;
  } else {
    // The dtype the device's autocast is set to (bf16 on CPU unless changed).
    options.dtype = autocast_dtype(device);
    cast_to_ = options.dtype;
  }
  guard_.emplace(options);
}

torch::Tensor PrecisionScope::cast(const torch::Tensor& x) const {
  return detail::cast_floating(x, cast_to_);
}

PinnedImpl::PinnedImpl(torch::nn::AnyModule module, Precision precision)
    : module_(std::move(module)), precision_(precision) {
  TORCH_CHECK(!module_.is_empty(), "Pinned needs a module to wrap");
  paisoar::detail::adopt_module_state(*this, *module_.ptr());
}

torch::Tensor PinnedImpl::forward(torch::Tensor x) {
  PrecisionScope scope(precision_, x.device().type());
  return module_.forward<torch::Tensor>(scope.cast(x));
}

void PinnedImpl::train(bool on) { paisoar::detail::forward_train(*this, *module_.ptr(), on); }

void PinnedImpl::pretty_print(std::ostream& stream) const {
  stream << "paisoar::amp::Pinned(" << to_string(precision_) << ", ";
  module_.ptr()->pretty_print(stream);
  stream << ")";
}

bool glob_match(const std::string& pattern, const std::string& name) {
  size_t p = 0, n = 0, star = std::string::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

PrecisionPolicy PrecisionPolicy::from_yaml(const std::string& yaml_text) {
  YAML::Node root;
  try {
    root = util::parse_yaml_document(yaml_text, "precision policy");
  } catch (const util::YamlTextError& e) {
    C10_THROW_ERROR(ValueError, e.what());
  }
  PrecisionPolicy policy;
  if (root.IsNull()) return policy;
  if (!root.IsMap()) {
    C10_THROW_ERROR(ValueError, 
        "precision policy: expected a mapping like `fp32: [head, \"*.norm\"]`, got a " +
        std::string(root.IsSequence() ? "list" : "scalar"));
  }
  for (const auto& entry : root) {
    const auto key = entry.first.as<std::string>();
    const Precision precision = parse_precision(key);
    const YAML::Node& patterns = entry.second;
    if (patterns.IsScalar()) {
      policy.add(patterns.as<std::string>(), precision);
    } else if (patterns.IsSequence()) {
      for (const auto& pattern : patterns) {
        if (!pattern.IsScalar()) {
          C10_THROW_ERROR(ValueError, "precision policy: '" + key +
                                      "' must list module-name patterns (strings)");
        }
        policy.add(pattern.as<std::string>(), precision);
      }
    } else {
      C10_THROW_ERROR(ValueError, "precision policy: '" + key +
                                  "' must be a pattern or a list of patterns");
    }
  }
  return policy;
}

PrecisionPolicy& PrecisionPolicy::add(std::string pattern, Precision precision) {
  if (pattern.empty()) C10_THROW_ERROR(ValueError, "precision policy: empty module-name pattern");
  rules_.emplace_back(std::move(pattern), precision);
  return *this;
}

Precision PrecisionPolicy::precision_for(const std::string& module_name) const {
  for (const auto& [pattern, precision] : rules_) {
    if (glob_match(pattern, module_name)) return precision;
  }
  return Precision::Inherit;
}

torch::nn::Sequential PrecisionPolicy::apply(const torch::nn::Sequential& model,
                                             const std::string& prefix) const {
  return paisoar::detail::rewrite_children(
      model, prefix,
      [this](const std::string& path,
             const torch::nn::AnyModule& child) -> std::optional<torch::nn::AnyModule> {
        const Precision precision = precision_for(path);
        if (precision == Precision::Inherit) return std::nullopt;
        return torch::nn::AnyModule(Pinned(child, precision));
      });
}

}  // namespace paisoar::amp
