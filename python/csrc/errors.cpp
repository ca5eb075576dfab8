// Errors from the C++ core as Python exceptions: the message without the C++
// backtrace, the type by what the caller should do (ValueError: fix the
// argument; CommError: a peer or the network; DataError: a file), or as
// PyTorch raises it (AssertionError: GradScaler's calls out of order).
#include "bindings.h"

#include "paisoar/amp/grad_scaler.h"
#include "paisoar/comm/types.h"
#include "paisoar/data/data_error.h"
#include "paisoar/train/config_schema.h"

namespace paisoar::python {

namespace {

// The exception classes live as long as the interpreter (not as C++ statics,
// which would outlive it).
PYBIND11_CONSTINIT py::gil_safe_call_once_and_store<py::object> comm_error;
PYBIND11_CONSTINIT py::gil_safe_call_once_and_store<py::object> data_error;
PYBIND11_CONSTINIT py::gil_safe_call_once_and_store<py::object> config_error;

}  // namespace

void bind_errors(py::module_& m) {
  comm_error.call_once_and_store_result(
      [&] { return py::exception<comm::CommError>(m, "CommError", PyExc_RuntimeError); });
  data_error.call_once_and_store_result(
      [&] { return py::exception<data::DataError>(m, "DataError", PyExc_RuntimeError); });
  config_error.call_once_and_store_result(
      [&] { return py::exception<train::ConfigError>(m, "ConfigError", PyExc_ValueError); });
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const comm::CommError& e) {
      py::set_error(comm_error.get_stored(), e.what_without_backtrace());
    } catch (const data::DataError& e) {
      py::set_error(data_error.get_stored(), e.what_without_backtrace());
    } catch (const train::ConfigError& e) {
      py::set_error(config_error.get_stored(), e.what_without_backtrace());
    } catch (const amp::GradScalerStateError& e) {
      PyErr_SetString(PyExc_AssertionError, e.what_without_backtrace());
    } catch (const c10::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what_without_backtrace());
    } catch (const c10::TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what_without_backtrace());
    } catch (const c10::IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what_without_backtrace());
    } catch (const c10::NotImplementedError& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what_without_backtrace());
    } catch (const c10::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
    }
  });
}

}  // namespace paisoar::python
