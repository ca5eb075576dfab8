// Activation checkpointing's module-name patterns for Python: the same globs
// (over dotted module paths) the C++ CheckpointPolicy and the config use.
#include "bindings.h"

#include "paisoar/memory/activation_checkpoint_policy.h"

namespace paisoar::python {

void bind_memory(py::module_& m) {
  py::class_<memory::CheckpointPolicy>(m, "CheckpointPolicy")
      .def(py::init([](std::vector<std::string> patterns) { return memory::CheckpointPolicy(std::move(patterns)); }),
           py::arg("patterns"))
      .def("matches", &memory::CheckpointPolicy::matches)
      .def_property_readonly("patterns", &memory::CheckpointPolicy::patterns);
}

}  // namespace paisoar::python
