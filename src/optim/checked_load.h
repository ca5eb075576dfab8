// load_checked: torch::optim's archive loading plus what it does not check,
// that each loaded state tensor has its parameter's shape. On a mismatch the
// optimizer is restored as it was and the error names the parameter, so a
// checkpoint of another model can neither crash a later step nor half-load.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/optim/serialize.h>

#include <string>
#include <utility>
#include <vector>

#include "src/util/torch_api.h"

namespace paisoar::optim::detail {

// `tensors_of(state)` lists the state's (name, tensor) pairs to check.
template <typename State, typename Options, typename TensorsOf>
void load_checked(torch::optim::Optimizer& optimizer, torch::serialize::InputArchive& archive,
                  const char* name, TensorsOf tensors_of) {
  // Snapshot, to restore on failure.
  std::vector<std::pair<paisoar::detail::OptimStateKey, std::unique_ptr<torch::optim::OptimizerParamState>>> state;
  for (const auto& [key, value] : optimizer.state()) state.emplace_back(key, value->clone());
  std::vector<std::unique_ptr<torch::optim::OptimizerOptions>> options;
  for (auto& group : optimizer.param_groups()) options.push_back(group.options().clone());
  auto restore = [&] {
    optimizer.state().clear();
    for (auto& [key, value] : state) optimizer.state()[key] = std::move(value);
    for (size_t g = 0; g < options.size(); ++g) {
      optimizer.param_groups()[g].set_options(std::move(options[g]));
    }
  };
  try {
    torch::optim::serialize<State, Options>(archive, optimizer);
  } catch (...) {
    restore();
    throw;
  }
  for (size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    const auto& params = optimizer.param_groups()[g].params();
    for (size_t i = 0; i < params.size(); ++i) {
      auto it = optimizer.state().find(paisoar::detail::optim_state_key(params[i]));
      if (it == optimizer.state().end()) continue;
      for (const auto& [field, t] : tensors_of(static_cast<const State&>(*it->second))) {
        if (!t.defined() || t.sizes() == params[i].sizes()) continue;
        std::string message = std::string(name) + ": the loaded state of parameter " +
                              std::to_string(i) + " of group " + std::to_string(g) + " ('" +
                              field + "') has shape " + c10::str(t.sizes()) +
                              ", the parameter " + c10::str(params[i].sizes()) +
                              ": the saved optimizer belongs to another model (nothing was loaded)";
        restore();
        TORCH_CHECK(false, message);
      }
    }
  }
}

}  // namespace paisoar::optim::detail
