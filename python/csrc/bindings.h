// The parts of paisoar._C, one function per subsystem, called by module.cpp.
// Each binds the C++ core as it is; the Pythonic surface is in python/paisoar/.
#pragma once

#include <torch/extension.h>

#include <memory>

namespace paisoar::python {

namespace py = pybind11;

// A Python object held by C++ code that copies or drops it without the GIL
// (std::function copies, the loader's worker threads, destructors on
// released threads): copies share one reference, taken and released with the
// GIL held. Use the object itself only with the GIL held.
class PyRef {
 public:
  explicit PyRef(py::object object)
      : object_(new py::object(std::move(object)), [](py::object* o) {
          py::gil_scoped_acquire gil;
          delete o;
        }) {}
  const py::object& operator*() const { return *object_; }
  const py::object* operator->() const { return object_.get(); }

 private:
  std::shared_ptr<py::object> object_;
};

void bind_errors(py::module_& m);  // c10 and paisoar errors -> Python exceptions
void bind_comm(py::module_& m);    // Communicator: own, or over torch.distributed's group
void bind_amp(py::module_& m);     // GradScaler's core, the auto dtype rule
void bind_ddp(py::module_& m);     // GradientReducer over a Python module's tensors
void bind_data(py::module_& m);    // data sets, transforms, the loader, the sampler
void bind_optim(py::module_& m);   // LARS, LAMB, the warmup/decay schedule
void bind_memory(py::module_& m);  // activation checkpointing's module patterns
void bind_zero(py::module_& m);    // ZeRO stages 1-3 with a Python optimizer on the shard
void bind_train(py::module_& m);   // the C++ Trainer from a config, with a Python model

}  // namespace paisoar::python
