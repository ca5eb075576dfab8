// choose_layout: rank 0 plans; the store carries its overrides (or its error).
#include "paisoar/plan/auto_layout.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "paisoar/error.h"
#include "paisoar/plan/planner.h"
#include "paisoar/train/config_schema.h"

namespace paisoar::plan {
namespace {

constexpr const char* kKey = "paisoar/parallel_auto/choice";

void record_plan(const train::TrainConfig& config, const Planning& planning, const std::string& table, int nproc) {
  std::filesystem::create_directories(config.run_dir);
  std::ofstream metrics(config.run_dir + "/metrics.jsonl", std::ios::app);
  const nlohmann::json record{
      {"time", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()},
      {"event", "plan"},
      {"chosen", planning.feasible.front().layout.overrides()},
      {"table", table},
      {"plans", nlohmann::json::parse(planning_json(planning, nproc))}};
  metrics << record.dump() << "\n";
}

}  // namespace

train::TrainConfig choose_layout(const train::TrainConfig& config, comm::Communicator& world, int ranks_per_node,
                                 const std::string& cache_path, const std::vector<int>& node_cpus,
                                 std::ostream& log) {
  if (!config.parallel.automatic) return config;
  const comm::Store store = world.store();
  if (world.rank() == 0 && !store.check({kKey})) {
    nlohmann::json choice;
    try {
      PlanOptions options;
      options.nproc = world.size();
      options.nodes = std::max(1, world.size() / std::max(1, ranks_per_node));
      options.cache_path = cache_path;
      options.node_cpus = node_cpus;
      const Planning planning = plan_layouts(config, options, log);
      const std::string table = format_planning(planning);
      log << "parallel: auto\n" << table;
      log.flush();
      record_plan(config, planning, table, world.size());
      choice["overrides"] = planning.feasible.front().layout.overrides();
    } catch (const train::ConfigError& e) {
      choice["error"] = "parallel: auto: " + error_text(e);
    }
    store.set(kKey, choice.dump());
  }
  const nlohmann::json choice = nlohmann::json::parse(store.get(kKey));
  if (choice.contains("error")) throw train::ConfigError(choice["error"].get<std::string>());
  train::TrainConfig planned = config;
  train::ConfigSchema schema = train::schema_for(planned);
  for (const auto& o : choice["overrides"]) schema.set(o.get<std::string>());
  planned.parallel.automatic = false;
  return planned;
}

}  // namespace paisoar::plan
