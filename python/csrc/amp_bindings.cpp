// amp for Python: the GradScaler's core (unscale-and-check, the inf/NaN verdict
// agreed across ranks, the scale policy) keyed by the Python optimizer, and the
// `auto` dtype rule. paisoar/amp.py gives them PyTorch's API.
#include "bindings.h"

#include <c10/core/DeviceType.h>

#include "paisoar/amp/dtype_choice.h"
#include "paisoar/amp/grad_scaler.h"
#include "paisoar/amp/precision.h"
#include "paisoar/comm/communicator.h"

namespace paisoar::python {

namespace {

amp::GradScaler::OptimizerKey key_of(uintptr_t optimizer_id) {
  return reinterpret_cast<amp::GradScaler::OptimizerKey>(optimizer_id);
}

}  // namespace

void bind_amp(py::module_& m) {
  using amp::GradScaler;
  py::class_<GradScaler>(m, "GradScaler")
      .def(py::init([](double init_scale, double growth_factor, double backoff_factor,
                       int64_t growth_interval, bool enabled, double min_scale,
                       std::shared_ptr<comm::Communicator> comm) {
             amp::GradScalerOptions options;
             options.init_scale = init_scale;
             options.growth_factor = growth_factor;
             options.backoff_factor = backoff_factor;
             options.growth_interval = growth_interval;
             options.enabled = enabled;
             options.min_scale = min_scale;
             return std::make_unique<GradScaler>(options, std::move(comm));
           }),
           py::arg("init_scale"), py::arg("growth_factor"), py::arg("backoff_factor"),
           py::arg("growth_interval"), py::arg("enabled"), py::arg("min_scale"), py::arg("comm"))
      .def("scale", &GradScaler::scale)
      .def(
          "unscale_",
          [](GradScaler& s, uintptr_t optimizer, const std::vector<at::Tensor>& params) {
            s.unscale_(key_of(optimizer), params);
          },
          py::call_guard<py::gil_scoped_release>())
      .def(
          "should_step",
          [](GradScaler& s, uintptr_t optimizer, const std::vector<at::Tensor>& params) {
            return s.should_step(key_of(optimizer), params);
          },
          py::call_guard<py::gil_scoped_release>())
      .def("update", py::overload_cast<>(&GradScaler::update))
      .def("update", py::overload_cast<double>(&GradScaler::update), py::arg("new_scale"))
      .def("get_scale", &GradScaler::get_scale)
      .def("is_enabled", &GradScaler::is_enabled)
      .def_property_readonly("skipped_steps", &GradScaler::skipped_steps)
      .def_property_readonly("growth_tracker", &GradScaler::growth_tracker)
      .def("state_dict", &GradScaler::state_dict)
      .def("load_state_dict", &GradScaler::load_state_dict);

  py::class_<amp::PrecisionPolicy>(m, "PrecisionPolicy")
      .def(py::init<>())
      .def(
          "add",
          [](amp::PrecisionPolicy& p, const std::string& pattern, const std::string& precision) {
            p.add(pattern, amp::parse_precision(precision));
          },
          py::arg("pattern"), py::arg("precision"))
      .def(
          "precision_for",
          [](const amp::PrecisionPolicy& p, const std::string& module_name) {
            return std::string(amp::to_string(p.precision_for(module_name)));
          },
          "'inherit', 'fp32' or 'low' for a dotted module name");

  m.def(
      "autocast_dtype",
      [](const std::string& device) {
        const auto choice = amp::choose_autocast_dtype(c10::Device(device).type());
        return py::make_tuple(choice.autocast, std::string(c10::toString(choice.dtype)), choice.reason);
      },
      py::arg("device"),
      "The `auto` rule: (autocast?, dtype name, reason) for a device type ('cpu', 'cuda').");
}

}  // namespace paisoar::python
