// Communicator for Python: paisoar's own group, joined from the launcher's
// environment or over the ranks and store of a torch.distributed group.
#include "bindings.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <chrono>

#include "paisoar/comm/communicator.h"
#include "paisoar/comm/env.h"

namespace paisoar::python {

namespace {

comm::CommOptions options_with_timeout(double timeout_s) {
  comm::CommOptions options;
  if (timeout_s > 0) {
    options.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  }
  return options;
}

comm::ReduceOp reduce_op_named(const std::string& name) {
  if (name == "sum") return comm::ReduceOp::Sum;
  if (name == "avg") return comm::ReduceOp::Avg;
  if (name == "min") return comm::ReduceOp::Min;
  if (name == "max") return comm::ReduceOp::Max;
  if (name == "product") return comm::ReduceOp::Product;
  TORCH_CHECK_VALUE(false, "op '", name, "' is not a reduce operation: use sum, avg, min, max or product");
}

}  // namespace

void bind_comm(py::module_& m) {
  using comm::Communicator;
  py::class_<Communicator, std::shared_ptr<Communicator>>(m, "Communicator")
      .def_static(
          "from_env",
          [](const std::string& backend, double timeout_s) {
            comm::CommOptions options = options_with_timeout(timeout_s);
            options.backend = comm::backend_named(backend, "backend");
            return Communicator::from_env(options);
          },
          py::arg("backend") = "auto", py::arg("timeout_s") = 0.0,
          py::call_guard<py::gil_scoped_release>(),
          "Joins the job of the environment (paisoar launch, torchrun): collective.")
      .def_static(
          "over_process_group",
          [](const c10::intrusive_ptr<::c10d::ProcessGroup>& group, const std::vector<int>& global_ranks,
             const std::string& backend, double timeout_s) {
            comm::CommOptions options = options_with_timeout(timeout_s);
            options.backend = comm::backend_named(backend, "backend");
            return Communicator::over_process_group(group, global_ranks,
                                                    comm::comm_options_from_env(comm::process_env(), options));
          },
          py::arg("group"), py::arg("global_ranks") = std::vector<int>{}, py::arg("backend") = "auto",
          py::arg("timeout_s") = 0.0, py::call_guard<py::gil_scoped_release>(),
          "paisoar's group over a torch.distributed group's ranks and store: collective.")
      .def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("size", &Communicator::size)
      .def_property_readonly("name", &Communicator::name)
      .def_property_readonly("backend_name", &Communicator::backend_name)
      .def(
          "allreduce",
          [](Communicator& c, at::Tensor tensor, const std::string& op) {
            c.allreduce(tensor, reduce_op_named(op)).wait();
          },
          py::arg("tensor"), py::arg("op") = "sum", py::call_guard<py::gil_scoped_release>())
      .def(
          "broadcast", [](Communicator& c, at::Tensor tensor, int root) { c.broadcast(tensor, root).wait(); },
          py::arg("tensor"), py::arg("root") = 0, py::call_guard<py::gil_scoped_release>())
      .def(
          "barrier", [](Communicator& c) { c.barrier().wait(); }, py::call_guard<py::gil_scoped_release>());
}

}  // namespace paisoar::python
