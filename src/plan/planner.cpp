// plan_layouts: the layouts a world can take, their costs measured (or
// cached), each predicted, those within the budget ranked fastest first.
#include "paisoar/plan/planner.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "paisoar/train/device_choice.h"
#include "src/diagnosis/memory_prediction.h"
#include "src/plan/cost_cache.h"
#include "src/plan/cost_measurement.h"
#include "src/util/cpu_count.h"
#include "src/util/cpu_list.h"
#include "src/util/thread_affinity.h"

namespace paisoar::plan {
namespace {

constexpr double kPlanMiB = 1024.0 * 1024.0;

// Each reason a world takes no layout, once, with the first layout it dropped.
std::string refusal_reasons(const std::vector<DroppedLayout>& dropped) {
  std::string why;
  std::set<std::string> said;
  for (const auto& d : dropped) {
    if (said.insert(d.why).second) why += "\n  " + d.layout.ranks.to_string() + ": " + d.why;
  }
  return why.empty() ? " none to try" : why;
}

PlanMachine machine_for(const train::TrainConfig& config, const PlanOptions& options) {
  PlanMachine m;
  m.per_node = options.nproc / options.nodes;
  m.cores = options.node_cpus.empty() ? util::usable_cpus() : static_cast<int>(options.node_cpus.size());
  m.threads = std::max(1, m.cores / m.per_node);
  m.device = train::resolve_device(config.device, 0);
  const bool across_hosts = options.nodes > 1 || config.distributed.backend == "gloo";
  m.backend = across_hosts ? comm::Backend::Gloo : comm::Backend::Shm;
  return m;
}

std::string describe_machine(const PlanMachine& m) {
  return std::to_string(m.cores) + " cores, " + std::to_string(m.per_node) + " ranks per node with " +
         std::to_string(m.threads) + (m.threads == 1 ? " thread" : " threads") + " each, " +
         (m.backend == comm::Backend::Gloo ? "Gloo between ranks (measured over loopback here)"
                                           : "shared memory between ranks") +
         ", precision " + m.precision;
}

}  // namespace

std::string cache_path_from_flag(const std::string& flag, const comm::EnvMap& env) {
  if (flag.empty()) return default_cache_path(env);
  return flag == "-" ? "" : flag;
}

std::vector<int> node_cpus_from_env(const comm::EnvMap& env) {
  const auto it = env.find("PAISOAR_NODE_CPUS");
  if (it == env.end()) return {};
  try {
    return util::parse_cpu_list(it->second);
  } catch (const std::invalid_argument&) {
    return {};
  }
}

std::string default_cache_path(const comm::EnvMap& env) {
  const auto set = [&env](const char* name) {
    const auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  if (const std::string p = set("PAISOAR_PLAN_CACHE"); !p.empty()) return p;
  if (const std::string x = set("XDG_CACHE_HOME"); !x.empty()) return x + "/paisoar/plan_costs.json";
  if (const std::string h = set("HOME"); !h.empty()) return h + "/.cache/paisoar/plan_costs.json";
  return "";
}

Planning plan_layouts(const train::TrainConfig& config, const PlanOptions& options, std::ostream& log) {
  if (options.nproc < 1 || options.nodes < 1 || options.nproc % options.nodes != 0) {
    throw train::ConfigError("--nproc " + std::to_string(options.nproc) + " does not split over --nodes " +
                             std::to_string(options.nodes) + "; give a multiple of the node count");
  }
  const Candidates candidates = enumerate_layouts(config, options.nproc);
  Planning out;
  out.dropped = candidates.dropped;
  if (candidates.layouts.empty()) {
    throw train::ConfigError("no layout of " + config.model.name + " fits " + std::to_string(options.nproc) +
                             " ranks:" + refusal_reasons(out.dropped));
  }
  PlanMachine machine = machine_for(config, options);
  // The measuring threads run where the node's ranks will (inherited from this thread).
  const util::ScopedThreadAffinity on_node(options.node_cpus);
  CostCache cache(options.cache_path, log);
  const CostInputs in = measure_costs(config, candidates.layouts, machine, cache);
  cache.save();
  out.machine = describe_machine(machine);

  out.budget_mib = options.memory_budget_mib > 0 ? options.memory_budget_mib : config.memory.budget_mb;
  const double budget = out.budget_mib * kPlanMiB;
  std::vector<RankedPlan> over;
  for (const auto& l : candidates.layouts) {
    RankedPlan p{l, predict_step(l, in)};
    if (budget > 0 && static_cast<double>(p.predicted.peak_bytes()) > budget) {
      out.dropped.push_back({l, "predicted peak " + train::mib_text(p.predicted.peak_bytes()) + " MiB per rank, over the " +
                                    train::mib_text(static_cast<int64_t>(budget)) + " MiB budget"});
      over.push_back(p);
      continue;
    }
    out.feasible.push_back(p);
  }
  if (out.feasible.empty()) {
    const auto smallest = std::min_element(over.begin(), over.end(), [](const RankedPlan& a, const RankedPlan& b) {
      return a.predicted.peak_bytes() < b.predicted.peak_bytes();
    });
    throw train::ConfigError("no layout fits " + train::mib_text(static_cast<int64_t>(budget)) +
                             " MiB per rank; the smallest, " + smallest->layout.to_string() + " on " +
                             std::to_string(options.nproc) + " ranks, needs " +
                             train::mib_text(smallest->predicted.peak_bytes()) +
                             " MiB: raise --memory-budget (memory.budget_mb) to that, or plan for more ranks");
  }
  std::stable_sort(out.feasible.begin(), out.feasible.end(), [](const RankedPlan& a, const RankedPlan& b) {
    return a.predicted.step_ms() < b.predicted.step_ms();
  });
  return out;
}

}  // namespace paisoar::plan
