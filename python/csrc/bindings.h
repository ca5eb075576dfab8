// The parts of paisoar._C, one function per subsystem, called by module.cpp.
// Each binds the C++ core as it is; the Pythonic surface is in python/paisoar/.
#pragma once

#include <torch/extension.h>

namespace paisoar::python {

namespace py = pybind11;

void bind_errors(py::module_& m);  // c10 and paisoar errors -> Python exceptions
void bind_comm(py::module_& m);    // Communicator: own, or over torch.distributed's group
void bind_amp(py::module_& m);     // GradScaler's core, the auto dtype rule
void bind_ddp(py::module_& m);     // GradientReducer over a Python module's tensors
void bind_data(py::module_& m);    // data sets, transforms, the loader, the sampler
void bind_optim(py::module_& m);   // LARS, LAMB, the warmup/decay schedule
void bind_memory(py::module_& m);  // activation checkpointing's module patterns
void bind_zero(py::module_& m);    // ZeRO stages 1-2 with a Python optimizer on the shard
void bind_train(py::module_& m);   // the C++ Trainer from a config, with a Python model

}  // namespace paisoar::python
