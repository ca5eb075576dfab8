// amp for Python: the GradScaler's core (the scale, unscale-and-check, the
// step protocol, the update, the optional verdict agreed across ranks) keyed
// by the Python optimizer, and the `auto` dtype rule. paisoar/amp.py gives
// them PyTorch's API.
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
  using Params = std::vector<at::Tensor>;
  py::class_<GradScaler>(m, "GradScaler")
      .def(py::init([](double init_scale, double growth_factor, double backoff_factor,
                       int64_t growth_interval, bool enabled, double min_scale,
                       std::shared_ptr<comm::Communicator> verdict_group) {
             amp::GradScalerOptions options;
             options.init_scale = init_scale;
             options.growth_factor = growth_factor;
             options.backoff_factor = backoff_factor;
             options.growth_interval = growth_interval;
             options.enabled = enabled;
             options.min_scale = min_scale;
             return std::make_unique<GradScaler>(options, std::move(verdict_group));
           }),
           py::arg("init_scale"), py::arg("growth_factor"), py::arg("backoff_factor"),
           py::arg("growth_interval"), py::arg("enabled"), py::arg("min_scale"), py::arg("verdict_group"))
      .def("scale", &GradScaler::scale)
      // Collective with a verdict group: the GIL is released while peers are waited for.
      .def(
          "unscale_", [](GradScaler& s, uintptr_t optimizer, const Params& params) { s.unscale_(key_of(optimizer), params); },
          py::call_guard<py::gil_scoped_release>())
      .def(
          "check_inf", [](GradScaler& s, uintptr_t optimizer, const Params& params) { s.check_inf(key_of(optimizer), params); },
          py::call_guard<py::gil_scoped_release>())
      .def(
          "should_step",
          [](GradScaler& s, uintptr_t optimizer, const Params& params) {
            return s.should_step(key_of(optimizer), params);
          },
          py::call_guard<py::gil_scoped_release>())
      .def("begin_step", [](const GradScaler& s, uintptr_t optimizer) { s.begin_step(key_of(optimizer)); })
      .def("stepped", [](GradScaler& s, uintptr_t optimizer) { s.stepped(key_of(optimizer)); })
      .def("unscaled", [](const GradScaler& s, uintptr_t optimizer) { return s.unscaled(key_of(optimizer)); })
      .def("found_inf_per_device",
           [](const GradScaler& s, uintptr_t optimizer) { return s.found_inf_per_device(key_of(optimizer)); })
      .def("found_inf", [](const GradScaler& s, uintptr_t optimizer) { return s.found_inf(key_of(optimizer)); })
      .def_property_readonly("mid_iteration", &GradScaler::mid_iteration)
      .def_property_readonly("scale_tensor",
                             [](const GradScaler& s) -> py::object {
                               if (!s.scale_tensor().defined()) return py::none();
                               return py::cast(s.scale_tensor());
                             })
      .def("update", py::overload_cast<>(&GradScaler::update))
      .def("update", py::overload_cast<const at::Tensor&>(&GradScaler::update), py::arg("new_scale"))
      .def("update", py::overload_cast<double>(&GradScaler::update), py::arg("new_scale"))
      .def("get_scale", &GradScaler::get_scale)
      .def("is_enabled", &GradScaler::is_enabled)
      .def_property_readonly("skipped_steps", &GradScaler::skipped_steps)
      .def_property_readonly("growth_tracker", &GradScaler::growth_tracker)
      .def_property("growth_factor", [](const GradScaler& s) { return s.options().growth_factor; },
                    &GradScaler::set_growth_factor)
      .def_property("backoff_factor", [](const GradScaler& s) { return s.options().backoff_factor; },
                    &GradScaler::set_backoff_factor)
      .def_property("growth_interval", [](const GradScaler& s) { return s.options().growth_interval; },
                    &GradScaler::set_growth_interval)
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
