// ZeRO for Python: the C++ ZeroOptimizer (units, reduce-scatter during
// backward, the all-gather after the step; at stage 3 the gather and release
// around each unit, driven by the Python module's hooks) over a Python
// module's own tensors, with the user's torch.optim optimizer on this rank's shard.
#include "bindings.h"

#include <torch/optim/sgd.h>

#include "module_mirror.h"
#include "paisoar/comm/communicator.h"
#include "paisoar/zero/zero_optimizer.h"

namespace paisoar::python {

namespace {

// The inner optimizer ZeroOptimizer drives: its step() is the Python
// optimizer's (built over the same shard tensors). The options ZeroOptimizer
// copies in are ignored: the Python optimizer's param_groups are the ones
// users and LR schedulers change.
class PythonShardOptimizer : public torch::optim::Optimizer {
 public:
  PythonShardOptimizer(std::vector<torch::Tensor> shard, py::object optimizer)
      : torch::optim::Optimizer({torch::optim::OptimizerParamGroup(std::move(shard))},
                                std::make_unique<torch::optim::SGDOptions>(0.0)),
        optimizer_(std::move(optimizer)) {}

  torch::Tensor step(LossClosure closure = nullptr) override {
    TORCH_CHECK(!closure, "ZeroOptimizer (Python): closures are not supported");
    py::gil_scoped_acquire gil;
    optimizer_->attr("step")();
    return {};
  }

  py::object python() const { return *optimizer_; }

 private:
  PyRef optimizer_;
};

struct PythonZero {
  std::shared_ptr<torch::nn::Module> mirror;
  std::unique_ptr<zero::ZeroOptimizer> optimizer;
  PythonShardOptimizer* inner = nullptr;  // owned by optimizer
};

}  // namespace

void bind_zero(py::module_& m) {
  py::class_<PythonZero>(m, "ZeroOptimizer")
      .def(py::init([](const std::vector<std::string>& parameter_names, const std::vector<at::Tensor>& parameters,
                       const std::vector<std::string>& buffer_names, const std::vector<at::Tensor>& buffers,
                       std::shared_ptr<comm::Communicator> comm, int stage, double bucket_cap_mb,
                       double first_bucket_mb, bool overlap, bool find_unused_parameters, py::function make_inner,
                       const std::vector<std::vector<std::string>>& units) {
             TORCH_CHECK_VALUE(stage != 3 || !units.empty(), "ZeroOptimizer: stage 3 from Python needs its units");
             zero::ZeroOptions options;
             options.stage = stage;
             options.units = units;
             options.bucket_cap_mb = bucket_cap_mb;
             options.first_bucket_mb = first_bucket_mb;
             options.overlap = overlap;
             options.find_unused_parameters = find_unused_parameters;
             auto out = std::make_unique<PythonZero>();
             out->mirror = mirror_module(parameter_names, parameters, buffer_names, buffers);
             PythonZero* self = out.get();
             // Copies of the factory are made while the GIL is released.
             PyRef inner_maker(std::move(make_inner));
             zero::OptimizerFactory factory = [self, inner_maker](const std::vector<zero::ShardParam>& shard) {
               std::vector<torch::Tensor> tensors = zero::tensors_of(shard);
               py::gil_scoped_acquire gil;
               auto inner = std::make_unique<PythonShardOptimizer>(tensors, (*inner_maker)(tensors));
               self->inner = inner.get();
               return std::unique_ptr<torch::optim::Optimizer>(std::move(inner));
             };
             {
               py::gil_scoped_release release;  // collective
               out->optimizer =
                   std::make_unique<zero::ZeroOptimizer>(out->mirror, std::move(comm), std::move(factory), options);
             }
             return out;
           }),
           py::arg("parameter_names"), py::arg("parameters"), py::arg("buffer_names"), py::arg("buffers"),
           py::arg("comm"), py::arg("stage"), py::arg("bucket_cap_mb"), py::arg("first_bucket_mb"),
           py::arg("overlap"), py::arg("find_unused_parameters"), py::arg("make_inner"),
           py::arg("units") = std::vector<std::vector<std::string>>{})
      .def_property_readonly("inner", [](const PythonZero& z) { return z.inner->python(); })
      .def(
          "step", [](PythonZero& z) { z.optimizer->step(); }, py::call_guard<py::gil_scoped_release>())
      .def(
          "zero_grad", [](PythonZero& z) { z.optimizer->zero_grad(); }, py::call_guard<py::gil_scoped_release>())
      .def(
          "unit_forward_begin", [](PythonZero& z, size_t k) { z.optimizer->unit_forward_begin(k); },
          py::call_guard<py::gil_scoped_release>())
      .def(
          "unit_forward_end", [](PythonZero& z, size_t k) { z.optimizer->unit_forward_end(k); },
          py::call_guard<py::gil_scoped_release>())
      .def(
          "unit_backward_begin", [](PythonZero& z, size_t k) { z.optimizer->unit_backward_begin(k); },
          py::call_guard<py::gil_scoped_release>())
      .def("set_sync", [](PythonZero& z, bool on) { z.optimizer->set_sync(on); })
      .def_property_readonly("sync", [](const PythonZero& z) { return z.optimizer->sync(); })
      .def_property_readonly("stage", [](const PythonZero& z) { return z.optimizer->stage(); })
      .def("memory",
           [](const PythonZero& z) {
             const auto mem = z.optimizer->memory();
             py::dict d;
             d["parameters"] = mem.params;
             d["gradients"] = mem.grads;
             d["optimizer_state"] = mem.optimizer_state;
             return d;
           })
      .def(
          "clip_grad_norm_", [](PythonZero& z, double max_norm) { return z.optimizer->clip_grad_norm_(max_norm); },
          py::arg("max_norm"), py::call_guard<py::gil_scoped_release>(),
          "Global-norm clipping over every rank's shard (collective); returns the norm before clipping.")
      .def(
          "full_parameters", [](PythonZero& z) { return z.optimizer->full_parameters(); },
          py::call_guard<py::gil_scoped_release>());
}

}  // namespace paisoar::python
