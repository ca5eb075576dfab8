// The parts of the training state the step file holds beside the model, as
// named entries: each one's own tensors (under "<name>.") written and read
// back by the entry, so a save and a resume walk the same list and `paisoar
// checkpoint inspect` names what it finds by the same names.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "paisoar/format/tensor_file.h"
#include "src/state/trainer_checkpoint.h"

namespace paisoar::train {

struct StateEntry {
  std::string name;  // its tensors' prefix in the step file: "rng", "schedule", "scaler"
  std::function<void(format::TensorMap&)> save;
  // Throws c10::Error naming the file when its tensors do not fit.
  std::function<void(const format::TensorFile&)> restore;
};

// The CPU random generator, the LR schedule and the loss scaler of `state`
// (which must outlive the entries).
std::vector<StateEntry> state_entries(const TrainerState& state);



}  // namespace paisoar::train
