// Module and RNG state as named tensors, and the capture/restore pair that
// bundles them with the optimizer's. Module restore checks everything first
// and copies only when all of it matches, so a failed resume changes nothing.
#include "paisoar/checkpoint/training_state.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <c10/util/Exception.h>
#include <nlohmann/json.hpp>
#include <torch/utils.h>

#include <map>
#include <mutex>
#include <sstream>
#include <vector>

namespace paisoar::checkpoint {
namespace {

constexpr const char* kModelPrefix = "model.";
constexpr const char* kRngTensor = "rng.cpu";

format::TensorMap module_tensors(const torch::nn::Module& module) {
  format::TensorMap tensors;
  for (const auto& item : module.named_parameters()) tensors[kModelPrefix + item.key()] = item.value();
  for (const auto& item : module.named_buffers()) {
    if (item.value().defined()) tensors[kModelPrefix + item.key()] = item.value();
  }
  return tensors;
}

std::string shape_text(const torch::Tensor& t) {
  std::ostringstream out;
  out << '[';
  for (int64_t d = 0; d < t.dim(); ++d) out << (d ? "," : "") << t.size(d);
  out << ']';
  return out.str();
}

}  // namespace

void add_module_state(const torch::nn::Module& module, format::TensorMap& tensors) {
  for (auto& [name, tensor] : module_tensors(module)) tensors[name] = tensor.detach();
}

void restore_module_state(torch::nn::Module& module, const format::TensorFile& checkpoint) {
  const format::TensorMap targets = module_tensors(module);
  std::vector<std::string> problems;
  for (const auto& [name, target] : targets) {
    auto it = checkpoint.tensors.find(name);
    if (it == checkpoint.tensors.end()) {
      problems.push_back("missing " + name);
    } else if (it->second.sizes() != target.sizes()) {
      problems.push_back("shape of " + name + " is " + shape_text(it->second) + " in the file, " +
                         shape_text(target) + " in the model");
    } else if (it->second.scalar_type() != target.scalar_type()) {
      problems.push_back(std::string("dtype of ") + name + " is " + c10::toString(it->second.scalar_type()) +
                         " in the file, " + c10::toString(target.scalar_type()) + " in the model");
    }
  }
  for (const auto& [name, tensor] : checkpoint.tensors) {
    if (name.rfind(kModelPrefix, 0) == 0 && targets.count(name) == 0) problems.push_back("unexpected " + name);
  }
  if (!problems.empty()) {
    std::string list;
    for (const auto& p : problems) list += (list.empty() ? "" : "; ") + p;
    TORCH_CHECK(false, "checkpoint '", checkpoint.source, "' does not match the model: ", list,
                ". Resume with the model the checkpoint was saved from, or start without it");
  }
  torch::NoGradGuard no_grad;
  for (const auto& [name, target] : targets) {
    // `target` shares storage with the module's tensor.
    torch::Tensor destination = target;
    destination.copy_(checkpoint.tensors.at(name));
  }
}

void add_rng_state(format::TensorMap& tensors) {
  auto generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  tensors[kRngTensor] = generator.get_state();
}

void restore_rng_state(const format::TensorFile& checkpoint) {
  auto it = checkpoint.tensors.find(kRngTensor);
  TORCH_CHECK(it != checkpoint.tensors.end(), "checkpoint '", checkpoint.source, "' holds no '", kRngTensor,
              "' tensor (it was saved without the random generator's state); restore without cpu_rng");
  auto generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  try {
    generator.set_state(it->second);
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, "checkpoint '", checkpoint.source, "': '", kRngTensor, "' is not a CPU generator state (",
                e.what_without_backtrace(), ")");
  }
}

format::TensorFile capture_training_state(const TrainingState& state, format::Metadata metadata) {
  for (const auto& [key, value] : metadata) {
    TORCH_CHECK(key.rfind("optim.", 0) != 0 && key.rfind("paisoar.", 0) != 0, "checkpoint: metadata key '", key,
                "' uses a reserved prefix (optim., paisoar.); rename it");
  }
  format::TensorFile checkpoint;
  checkpoint.metadata = std::move(metadata);
  if (state.model != nullptr) add_module_state(*state.model, checkpoint.tensors);
  if (state.optimizer != nullptr) optim::add_optimizer_state(*state.optimizer, checkpoint.tensors, checkpoint.metadata);
  if (state.model != nullptr && state.optimizer != nullptr) {
    // Which parameter each optimizer index is, by name: what a reader that
    // reshards the optimizer state (zero::ShardSet) needs.
    std::map<const void*, std::string> names;
    for (const auto& p : state.model->named_parameters()) names[p.value().unsafeGetTensorImpl()] = p.key();
    nlohmann::json order = nlohmann::json::array();
    for (const auto& group : state.optimizer->param_groups()) {
      for (const auto& p : group.params()) {
        const auto it = names.find(p.unsafeGetTensorImpl());
        order.push_back(it == names.end() ? std::string() : it->second);
      }
    }
    checkpoint.metadata[kOptimizerNamesKey] = order.dump();
  }
  if (state.cpu_rng) add_rng_state(checkpoint.tensors);
  return checkpoint;
}

void restore_training_state(const TrainingState& state, const format::TensorFile& checkpoint) {
  if (state.model != nullptr) restore_module_state(*state.model, checkpoint);
  if (state.optimizer != nullptr) optim::restore_optimizer_state(*state.optimizer, checkpoint);
  if (state.cpu_rng) restore_rng_state(checkpoint);
}

}  // namespace paisoar::checkpoint
