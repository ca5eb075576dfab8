// DDP for Python: the GradientReducer (buckets, overlap with backward, rebuild,
// no_sync, compression hooks) over a Python module's own tensors, through a
// mirror module. paisoar/parallel.py wraps it as DistributedDataParallel.
#include "bindings.h"

#include <torch/csrc/distributed/c10d/python_comm_hook.h>

#include "module_mirror.h"
#include "torch_comm_hook.h"
#include "paisoar/comm/communicator.h"
#include "paisoar/ddp/comm_hook.h"
#include "paisoar/ddp/gradient_reducer.h"

namespace paisoar::python {

namespace {

// The reducer and the mirror module it reads, kept alive together.
struct PythonReducer {
  std::shared_ptr<torch::nn::Module> mirror;
  std::shared_ptr<comm::Communicator> comm;
  std::unique_ptr<ddp::GradientReducer> reducer;
};

py::dict stats_dict(const ddp::ReducerStats& s) {
  py::dict d;
  d["backward_s"] = s.backward_s;
  d["exposed_comm_s"] = s.exposed_comm_s;
  d["bytes"] = s.bytes;
  d["buckets"] = s.buckets;
  d["rebuilt"] = s.rebuilt;
  return d;
}

}  // namespace

void bind_ddp(py::module_& m) {
  py::class_<PythonReducer>(m, "GradientReducer")
      .def(py::init([](const std::vector<std::string>& parameter_names, const std::vector<at::Tensor>& parameters,
                       const std::vector<std::string>& buffer_names, const std::vector<at::Tensor>& buffers,
                       std::shared_ptr<comm::Communicator> comm, double bucket_cap_mb, double first_bucket_mb,
                       bool overlap, bool rebuild_buckets, bool find_unused_parameters, bool broadcast_buffers,
                       const std::string& compression, int powersgd_rank, bool error_feedback,
                       int ranks_per_node, bool init_sync, bool gradient_as_bucket_view, bool static_graph,
                       const std::vector<double>& bucket_caps_mb) {
             ddp::DdpOptions options;
             options.bucket_cap_mb = bucket_cap_mb;
             options.first_bucket_mb = first_bucket_mb;
             options.overlap = overlap;
             options.rebuild_buckets = rebuild_buckets;
             options.find_unused_parameters = find_unused_parameters;
             options.broadcast_buffers = broadcast_buffers;
             options.compression.type = ddp::parse_compression(compression);
             options.compression.powersgd_rank = powersgd_rank;
             options.compression.error_feedback = error_feedback;
             options.ranks_per_node = ranks_per_node;
             options.init_sync = init_sync;
             options.gradient_as_bucket_view = gradient_as_bucket_view;
             options.static_graph = static_graph;
             options.bucket_caps_mb = bucket_caps_mb;
             options.python_front_end = true;
             // Flat averaging (ranks_per_node is 0 here): no collective to agree on a hierarchy,
             // so that init_sync=False (an unpickled model, on one rank) builds without peers.
             options.hierarchical = false;
             auto out = std::make_unique<PythonReducer>();
             out->mirror = mirror_module(parameter_names, parameters, buffer_names, buffers);
             out->comm = comm;
             py::gil_scoped_release release;  // collective: the peers may take a while
             out->reducer = std::make_unique<ddp::GradientReducer>(out->mirror, std::move(comm), options);
             return out;
           }),
           py::arg("parameter_names"), py::arg("parameters"), py::arg("buffer_names"), py::arg("buffers"),
           py::arg("comm"), py::arg("bucket_cap_mb"), py::arg("first_bucket_mb"), py::arg("overlap"),
           py::arg("rebuild_buckets"), py::arg("find_unused_parameters"), py::arg("broadcast_buffers"),
           py::arg("compression"), py::arg("powersgd_rank"), py::arg("error_feedback"),
           py::arg("ranks_per_node"), py::arg("init_sync") = true, py::arg("gradient_as_bucket_view") = true,
           py::arg("static_graph") = false, py::arg("bucket_caps_mb") = std::vector<double>{},
           "Collective (init_sync): checks every rank holds the same tensors, broadcasts rank 0's; hooks backward.")
      .def(
          "pre_forward", [](PythonReducer& r) { r.reducer->pre_forward(); },
          py::call_guard<py::gil_scoped_release>())
      .def(
          "post_forward",
          [](PythonReducer& r, const std::vector<at::Tensor>& outputs) { r.reducer->post_forward(outputs); },
          py::call_guard<py::gil_scoped_release>())
      .def(
          "set_compression",
          [](PythonReducer& r, const std::string& compression, int powersgd_rank, bool error_feedback) {
            ddp::CompressionOptions options;
            options.type = ddp::parse_compression(compression);
            options.powersgd_rank = powersgd_rank;
            options.error_feedback = error_feedback;
            r.reducer->set_comm_hook(ddp::make_comm_hook(options, r.comm));
          },
          py::arg("compression"), py::arg("powersgd_rank"), py::arg("error_feedback"))
      .def(
          "set_torch_comm_hook",
          [](PythonReducer& r, py::object state, py::object hook) {
            auto torch_hook = std::make_unique<TorchCommHook>(
                std::make_unique<c10d::PythonCommHook>(std::move(state), std::move(hook)));
            py::gil_scoped_release release;
            r.reducer->set_comm_hook(std::move(torch_hook));
          },
          py::arg("state"), py::arg("hook"),
          "torch's register_comm_hook contract: hook(state, GradBucket) -> Future, run per bucket.")
      .def(
          "set_sync", [](PythonReducer& r, bool on) { r.reducer->set_sync(on); },
          py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("sync",
                             [](const PythonReducer& r) {
                               py::gil_scoped_release release;
                               return r.reducer->sync();
                             })
      .def(
          "set_static_graph", [](PythonReducer& r) { r.reducer->set_static_graph(); },
          py::call_guard<py::gil_scoped_release>())
      .def(
          "shadow_backward", [](PythonReducer& r) { r.reducer->shadow_backward(); },
          py::call_guard<py::gil_scoped_release>(),
          "Collective: a joined rank's share of one synchronised backward of the others.")
      .def(
          "set_gradient_divisor", [](PythonReducer& r, double divisor) { r.reducer->set_gradient_divisor(divisor); },
          py::arg("divisor"))
      .def("bucket_assignment", [](const PythonReducer& r) { return r.reducer->bucket_assignment(); })
      .def("last_stats", [](const PythonReducer& r) { return stats_dict(r.reducer->last_stats()); })
      .def(
          "broadcast",
          [](const PythonReducer& r, const std::vector<at::Tensor>& tensors, int root) {
            r.reducer->broadcast(tensors, root);
          },
          py::arg("tensors"), py::arg("root") = 0, py::call_guard<py::gil_scoped_release>(),
          "Collective: rank `root`'s values of `tensors` on every rank of the reducer's group.");
}

}  // namespace paisoar::python
