// LARS, LAMB and the warmup/decay schedule for Python: the C++ optimizers run
// over a Python optimizer's own parameters (paisoar/optim.py keeps their state
// in the Python optimizer's `state`, so torch's state_dict and LR schedulers work).
#include "bindings.h"

#include "paisoar/optim/lamb.h"
#include "paisoar/optim/lars.h"
#include "paisoar/optim/lr_schedule.h"

namespace paisoar::python {

namespace {

using optim::LAMB;
using optim::LAMBOptions;
using optim::LAMBParamState;
using optim::LARS;
using optim::LARSOptions;
using optim::LARSParamState;

template <typename T>
T value(const py::dict& d, const char* key, T fallback) {
  return d.contains(key) ? d[key].cast<T>() : fallback;
}

LARSOptions lars_options(const py::dict& d) {
  LARSOptions o;
  o.lr(value(d, "lr", o.lr())).momentum(value(d, "momentum", o.momentum()));
  o.weight_decay(value(d, "weight_decay", o.weight_decay())).eta(value(d, "eta", o.eta()));
  o.eps(value(d, "eps", o.eps())).exclude_1d(value(d, "exclude_1d", o.exclude_1d()));
  return o;
}

LAMBOptions lamb_options(const py::dict& d) {
  LAMBOptions o;
  o.lr(value(d, "lr", o.lr())).betas(value(d, "betas", o.betas())).eps(value(d, "eps", o.eps()));
  o.weight_decay(value(d, "weight_decay", o.weight_decay()));
  o.bias_correction(value(d, "bias_correction", o.bias_correction()));
  o.exclude_1d(value(d, "exclude_1d", o.exclude_1d()));
  return o;
}

// One C++ optimizer over a Python optimizer's groups.
class LayerwiseCore {
 public:
  LayerwiseCore(std::string kind, const std::vector<std::vector<at::Tensor>>& groups,
                const std::vector<py::dict>& options)
      : kind_(std::move(kind)) {
    TORCH_CHECK_VALUE(kind_ == "lars" || kind_ == "lamb", "optimizer kind '", kind_, "': lars or lamb");
    TORCH_CHECK_VALUE(groups.size() == options.size(), "one options dict per param group");
    std::vector<torch::optim::OptimizerParamGroup> cpp_groups;
    for (size_t g = 0; g < groups.size(); ++g) {
      for (const auto& p : groups[g]) params_.push_back(p);
      if (kind_ == "lars") {
        cpp_groups.emplace_back(groups[g], std::make_unique<LARSOptions>(lars_options(options[g])));
      } else {
        cpp_groups.emplace_back(groups[g], std::make_unique<LAMBOptions>(lamb_options(options[g])));
      }
    }
    if (kind_ == "lars") optimizer_ = std::make_unique<LARS>(std::move(cpp_groups));
    else optimizer_ = std::make_unique<LAMB>(std::move(cpp_groups));
  }

  void set_options(size_t group, const py::dict& options) {
    auto& groups = optimizer_->param_groups();
    TORCH_CHECK_INDEX(group < groups.size(), "param group ", group, " of ", groups.size());
    if (kind_ == "lars") groups[group].set_options(std::make_unique<LARSOptions>(lars_options(options)));
    else groups[group].set_options(std::make_unique<LAMBOptions>(lamb_options(options)));
  }

  void step() { optimizer_->step(); }

  py::dict state(size_t index) const {
    py::dict out;
    auto& all = optimizer_->state();
    auto found = all.find(param(index).unsafeGetTensorImpl());
    if (found == all.end()) return out;
    if (kind_ == "lars") {
      out["momentum_buffer"] = static_cast<const LARSParamState&>(*found->second).momentum_buffer();
    } else {
      const auto& s = static_cast<const LAMBParamState&>(*found->second);
      out["step"] = s.step();
      out["exp_avg"] = s.exp_avg();
      out["exp_avg_sq"] = s.exp_avg_sq();
    }
    return out;
  }

  void set_state(size_t index, const py::dict& state) {
    void* key = param(index).unsafeGetTensorImpl();
    if (state.empty()) {  // none in Python (a fresh or loaded optimizer): none here either
      optimizer_->state().erase(key);
      return;
    }
    if (kind_ == "lars") {
      auto s = std::make_unique<LARSParamState>();
      s->momentum_buffer(state["momentum_buffer"].cast<at::Tensor>());
      optimizer_->state()[key] = std::move(s);
    } else {
      auto s = std::make_unique<LAMBParamState>();
      s->step(state["step"].cast<int64_t>());
      s->exp_avg(state["exp_avg"].cast<at::Tensor>());
      s->exp_avg_sq(state["exp_avg_sq"].cast<at::Tensor>());
      optimizer_->state()[key] = std::move(s);
    }
  }

 private:
  const at::Tensor& param(size_t index) const {
    TORCH_CHECK_INDEX(index < params_.size(), "parameter ", index, " of ", params_.size());
    return params_[index];
  }

  std::string kind_;
  std::vector<at::Tensor> params_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

optim::LrDecay decay_named(const std::string& name) {
  if (name == "constant") return optim::LrDecay::Constant;
  if (name == "cosine") return optim::LrDecay::Cosine;
  if (name == "step") return optim::LrDecay::Step;
  if (name == "polynomial") return optim::LrDecay::Polynomial;
  TORCH_CHECK_VALUE(false, "decay='", name, "': use constant, cosine, step or polynomial");
}

}  // namespace

void bind_optim(py::module_& m) {
  py::class_<LayerwiseCore>(m, "LayerwiseOptimizer")
      .def(py::init<std::string, const std::vector<std::vector<at::Tensor>>&, const std::vector<py::dict>&>(),
           py::arg("kind"), py::arg("groups"), py::arg("options"))
      .def("set_options", &LayerwiseCore::set_options)
      .def("step", &LayerwiseCore::step, py::call_guard<py::gil_scoped_release>())
      .def("state", &LayerwiseCore::state)
      .def("set_state", &LayerwiseCore::set_state);

  py::class_<optim::LrScheduleOptions>(m, "LrScheduleOptions")
      .def(py::init([](int64_t warmup_steps, double warmup_start_factor, const std::string& decay,
                       int64_t total_steps, double final_factor, double power, double gamma, int64_t step_size,
                       std::vector<int64_t> milestones) {
             optim::LrScheduleOptions o;
             o.warmup_steps = warmup_steps;
             o.warmup_start_factor = warmup_start_factor;
             o.decay = decay_named(decay);
             o.total_steps = total_steps;
             o.final_factor = final_factor;
             o.power = power;
             o.gamma = gamma;
             o.step_size = step_size;
             o.milestones = std::move(milestones);
             return optim::checked_schedule(o);
           }),
           py::arg("warmup_steps"), py::arg("warmup_start_factor"), py::arg("decay"), py::arg("total_steps"),
           py::arg("final_factor"), py::arg("power"), py::arg("gamma"), py::arg("step_size"),
           py::arg("milestones"))
      .def("factor", [](const optim::LrScheduleOptions& o, int64_t step) { return optim::schedule_factor(o, step); });

  m.def("scaled_lr", &optim::scaled_lr, py::arg("base_lr"), py::arg("global_batch"), py::arg("base_batch"));
}

}  // namespace paisoar::python
