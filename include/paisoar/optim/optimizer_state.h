// An optimizer's state as named tensors Python can read, and back. Works for
// any torch::optim optimizer that saves in torch::optim's archive layout (SGD,
// Adam, AdamW, Adagrad, RMSprop, paisoar's LARS and LAMB): the optimizer's own
// save() is read back field by field, and load() is fed an archive rebuilt
// from the checkpoint, so each optimizer's own loading rules still apply.
//
// Layout, with i the parameter's index counted across groups in order:
//   tensor   optim.<i>.<field>      e.g. optim.0.momentum_buffer, optim.3.exp_avg,
//                                   optim.3.step (integer fields as 0-d I64,
//                                   floating ones as 0-d F64)
//   metadata optim.type             the optimizer's C++ type
//   metadata optim.groups           JSON [{"params": count, "options": {"lr": 0.1, ...}}]
//   metadata optim.scalar_fields    JSON {"step": "int"}: fields stored from numbers
// An optimizer whose save() writes some other layout is kept whole as the
// U8 tensor "optim.archive" (torch's serialized archive), readable only by C++.
#pragma once

#include "paisoar/format/tensor_file.h"

#include <torch/optim/optimizer.h>

namespace paisoar::optim {

// Adds `optimizer`'s state and per-group options to `tensors` and `metadata`.
// Throws c10::Error if the optimizer saves nothing (e.g. paisoar's
// FlatOptimizer, which has no save()).
void add_optimizer_state(const torch::optim::Optimizer& optimizer, format::TensorMap& tensors, format::Metadata& metadata);

// Replaces `optimizer`'s state and group options by the checkpoint's, so the
// next step() is the one the saved optimizer would have taken, bit for bit.
// REQUIRES: `optimizer` was built over the same parameters, in the same groups
// and order, as the saved one. Throws c10::Error naming the checkpoint file if
// the type, group layout or a state tensor's shape differs; the optimizer is
// then left unchanged.
void restore_optimizer_state(torch::optim::Optimizer& optimizer, const format::TensorFile& checkpoint);

}  // namespace paisoar::optim
