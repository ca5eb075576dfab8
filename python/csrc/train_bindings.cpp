// paisoar.train for Python: the C++ Trainer (DDP or ZeRO, amp, the loader,
// checkpoints with resume, the profiler and its report) run from a config,
// with the reference model it names or the user's torch.nn.Module, whose
// forward the Trainer calls back into Python for (docs/PYTHON.md says why a
// callback and not TorchScript).
#include "bindings.h"

#include <sstream>

#include "module_mirror.h"
#include "paisoar/comm/communicator.h"
#include "paisoar/comm/env.h"
#include "paisoar/plan/planner.h"
#include "paisoar/train/device_choice.h"
#include "paisoar/train/run_environment.h"
#include "paisoar/train/train_config.h"
#include "paisoar/train/trainer.h"
#include "paisoar/train/zoo.h"

namespace paisoar::python {

namespace {

// The Python model held for the Trainer's forward.
struct PythonForward {
  explicit PythonForward(py::object module) : model(std::move(module)) {}
  torch::Tensor operator()(const torch::Tensor& x) const {
    py::gil_scoped_acquire gil;
    py::object out = (*model)(x);
    TORCH_CHECK_TYPE(THPVariable_Check(out.ptr()),
                     "paisoar.train: the model's forward must return one tensor (the logits), got ",
                     std::string(py::str(py::type::handle_of(out))));
    return out.cast<torch::Tensor>();
  }
  PyRef model;
};

py::dict result_dict(const train::TrainResult& r) {
  py::dict d;
  d["steps"] = r.steps;
  d["global_step"] = r.global_step;
  d["resumed_from"] = r.resumed_from;
  d["seconds"] = r.seconds;
  d["samples_per_s"] = r.samples_per_s;
  d["final_loss"] = r.final_loss;
  d["accuracy"] = r.accuracy;
  d["time_to_target_s"] = r.time_to_target_s;
  return d;
}

}  // namespace

void bind_train(py::module_& m) {
  m.def(
      "train",
      [](const std::string& config_path, const std::vector<std::string>& overrides, py::object model,
         const std::vector<std::string>& parameter_names, const std::vector<at::Tensor>& parameters,
         const std::vector<std::string>& buffer_names, const std::vector<at::Tensor>& buffers,
         std::shared_ptr<data::Dataset> train_data, std::shared_ptr<data::Dataset> eval_data) {
        train::TrainConfig config = train::load_config(config_path, overrides);
        const comm::EnvMap env = comm::process_env();
        const comm::RankInfo rank = comm::rank_info_from_env(env);
        train::validate(config, rank.world_size);
        const torch::Device device = train::resolve_device(config.device, rank.local_rank);
        std::shared_ptr<PythonForward> forward;
        std::shared_ptr<torch::nn::Module> mirror;
        if (!model.is_none()) {
          TORCH_CHECK_VALUE(!config.parallel.automatic,
                            "paisoar.train: parallel: auto plans the reference models' layers; with your own model "
                            "choose zero.stage and train.grad_accumulation yourself (paisoar.plan ranks them for "
                            "a reference model)");
          TORCH_CHECK_VALUE(config.parallel.pipeline <= 1 && config.parallel.tensor <= 1,
                            "paisoar.train: parallel.pipeline and parallel.tensor split the reference models "
                            "only; with your own model use data parallelism (DDP or ZeRO 1-2)");
          TORCH_CHECK_VALUE(config.zero.stage <= 2, "paisoar.train: zero.stage 3 gathers the parameters layer by "
                            "layer around forwards the Trainer runs, which it cannot do inside your model's "
                            "forward; use zero.stage 1 or 2 here, or paisoar.zero.ZeroOptimizer(model, ..., "
                            "stage=3) in your own training loop");
          forward = std::make_shared<PythonForward>(model);
          mirror = mirror_module(parameter_names, parameters, buffer_names, buffers);
        }
        py::gil_scoped_release release;
        comm::CommOptions comm_options;
        comm_options.backend = comm::backend_named(config.distributed.backend, "distributed.backend");
        auto comm = comm::Communicator::from_env(comm_options);
        train::Trainer trainer(config, comm, train::RunEnvironment::from_env(env));
        train::TrainTask task =
            train_data ? train::make_task(trainer.config(), train_data, eval_data, trainer.tensor_group())
                       : train::make_task(trainer.config(), trainer.tensor_group());
        if (forward) {
          task.model = mirror;
          task.forward = [forward](const torch::Tensor& x) { return (*forward)(x); };
          task.layers = models::LayerSequence();
        }
        task.model->to(device);
        const train::TrainResult result = trainer.fit(task);
        py::gil_scoped_acquire gil;
        return result_dict(result);
      },
      py::arg("config_path"), py::arg("overrides"), py::arg("model"), py::arg("parameter_names"),
      py::arg("parameters"), py::arg("buffer_names"), py::arg("buffers"), py::arg("train_data"),
      py::arg("eval_data"));
  m.def(
      "plan",
      [](const std::string& config_path, const std::vector<std::string>& overrides, int nproc, int nodes,
         double memory_budget_mib, const std::string& cache) {
        const train::TrainConfig config = train::load_config(config_path, overrides);
        plan::PlanOptions options;
        options.nproc = nproc;
        options.nodes = nodes;
        options.memory_budget_mib = memory_budget_mib;
        const comm::EnvMap env = comm::process_env();
        options.cache_path = plan::cache_path_from_flag(cache, env);
        options.node_cpus = plan::node_cpus_from_env(env);
        std::ostringstream warnings;
        plan::Planning planning;
        {
          py::gil_scoped_release release;
          planning = plan::plan_layouts(config, options, warnings);
        }
        if (!warnings.str().empty()) PyErr_WarnEx(PyExc_RuntimeWarning, warnings.str().c_str(), 1);
        return py::make_tuple(plan::planning_json(planning, nproc), plan::format_planning(planning));
      },
      py::arg("config_path"), py::arg("overrides"), py::arg("nproc"), py::arg("nodes"),
      py::arg("memory_budget_mib"), py::arg("cache"));
}

}  // namespace paisoar::python
