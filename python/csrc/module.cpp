// paisoar._C: the extension module. What torch it was built against is
// exported so that `import paisoar` can refuse another one with a clear message.
#include "bindings.h"

#include "paisoar/version.h"

PYBIND11_MODULE(_C, m) {
  namespace python = paisoar::python;
  m.doc() = "paisoar's C++ core (libpaisoar) for the Python package";
  m.attr("built_with_torch") = PAISOAR_TORCH_VERSION;
  m.attr("built_with_cuda") = static_cast<bool>(PAISOAR_BUILT_WITH_CUDA);
  m.attr("version") = PAISOAR_VERSION;
  python::bind_errors(m);
  python::bind_comm(m);
  python::bind_amp(m);
  python::bind_ddp(m);
  python::bind_data(m);
  python::bind_optim(m);
  python::bind_memory(m);
  python::bind_zero(m);
  python::bind_train(m);
}
