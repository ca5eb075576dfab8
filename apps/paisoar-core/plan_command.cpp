// `paisoar plan --config C --nproc N [--nodes M] [--memory-budget MB] [--json F]`:
// every feasible layout of the config's model on N ranks, ranked by the
// predicted step time, with the predicted peak memory per rank and why each
// other layout was dropped (plan/planner.h).
#include <fstream>
#include <iostream>

#include "apps/paisoar-core/commands.h"
#include "paisoar/comm/env.h"
#include "paisoar/error.h"
#include "paisoar/plan/planner.h"
#include "paisoar/train/train_config.h"

namespace paisoar::app {
namespace {

struct PlanArgs {
  std::string config;
  std::vector<std::string> sets;
  plan::PlanOptions options;
  std::string json;
};

int run_plan(const PlanArgs& a) {
  try {
    const train::TrainConfig config = train::load_config(a.config, a.sets);
    plan::PlanOptions options = a.options;
    const comm::EnvMap env = comm::process_env();  // the edge
    options.cache_path = plan::cache_path_from_flag(a.options.cache_path, env);
    options.node_cpus = plan::node_cpus_from_env(env);
    const plan::Planning planning = plan::plan_layouts(config, options, std::cerr);
    std::cout << plan::format_planning(planning);
    if (!a.json.empty()) {
      const std::string text = plan::planning_json(planning, a.options.nproc);
      if (a.json == "-") {
        std::cout << text << "\n";
      } else {
        std::ofstream out(a.json);
        out << text << "\n";
        if (!out.flush()) {
          std::cerr << "paisoar plan: --json " << a.json << " could not be written; give a writable path\n";
          return 2;
        }
      }
    }
  } catch (const train::ConfigError& e) {
    std::cerr << "paisoar plan: " << error_text(e) << "\n";
    return 2;
  }
  return 0;
}

}  // namespace

Command add_plan_command(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  auto* cmd = app.add_subcommand(
      "plan", "predict every layout's step time and memory on N ranks and rank them (parallel: auto trains the best)");
  cmd->add_option("--config", a->config, "YAML config (default: the built-in defaults)")->check(CLI::ExistingFile);
  cmd->add_option("--set", a->sets, "override a key, e.g. --set train.batch_size=256 (repeatable)");
  cmd->add_option("--nproc", a->options.nproc, "ranks in all")->required()->check(CLI::Range(1, 65536));
  cmd->add_option("--nodes", a->options.nodes, "hosts the ranks are spread over")->check(CLI::Range(1, 65536));
  cmd->add_option("--memory-budget,--memory_budget", a->options.memory_budget_mib,
                  "MiB per rank a layout may use (default: memory.budget_mb; 0: no limit)")
      ->check(CLI::Range(0.0, 1e12));
  cmd->add_option("--json", a->json, "also write the ranking as a JSON list to this file (-: stdout)");
  cmd->add_option("--cache", a->options.cache_path,
                  "the measurements kept between plans (default $PAISOAR_PLAN_CACHE, else "
                  "~/.cache/paisoar/plan_costs.json; -: none)");
  return [a](int, char**) { return run_plan(*a); };
}

}  // namespace paisoar::app
