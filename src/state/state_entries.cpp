// state_entries: the RNG, the schedule and the scaler, each under its own prefix.
#include "src/state/state_entries.h"

#include <map>

#include "paisoar/amp/grad_scaler.h"
#include "paisoar/checkpoint/training_state.h"
#include "paisoar/optim/lr_schedule.h"

namespace paisoar::train {
namespace {

std::function<void(format::TensorMap&)> save_prefixed(const std::string& prefix,
                                                      std::function<std::map<std::string, torch::Tensor>()> state) {
  return [prefix, state = std::move(state)](format::TensorMap& out) {
    for (const auto& [key, value] : state()) out[prefix + "." + key] = value;
  };
}

std::map<std::string, torch::Tensor> take_prefixed(const format::TensorMap& in, const std::string& prefix) {
  std::map<std::string, torch::Tensor> out;
  const std::string with_dot = prefix + ".";
  for (const auto& [key, value] : in) {
    if (key.compare(0, with_dot.size(), with_dot) == 0) out[key.substr(with_dot.size())] = value;
  }
  return out;
}

}  // namespace

std::vector<StateEntry> state_entries(const TrainerState& state) {
  optim::LrSchedule* schedule = state.schedule;
  amp::GradScaler* scaler = state.scaler;
  return {
      {"rng", [](format::TensorMap& out) { checkpoint::add_rng_state(out); },
       [](const format::TensorFile& file) { checkpoint::restore_rng_state(file); }},
      {"schedule", save_prefixed("schedule", [schedule] { return schedule->state_dict(); }),
       [schedule](const format::TensorFile& file) { schedule->load_state_dict(take_prefixed(file.tensors, "schedule")); }},
      {"scaler", save_prefixed("scaler", [scaler] { return scaler->state_dict(); }),
       [scaler](const format::TensorFile& file) { scaler->load_state_dict(take_prefixed(file.tensors, "scaler")); }},
  };
}


}  // namespace paisoar::train
