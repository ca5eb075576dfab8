// How a Planning is shown: the ranked table `paisoar plan` prints (and a run
// under `parallel: auto` logs), and the JSON list of `--json`.
#include <nlohmann/json.hpp>

#include <cstdarg>
#include <cstdio>
#include <map>
#include <sstream>

#include "paisoar/plan/planner.h"

namespace paisoar::plan {
namespace {

constexpr double kTableMiB = 1024.0 * 1024.0;

std::string table_row(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string table_row(const char* format, ...) {
  char line[400];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  return line;
}

std::string ranks_text(const hybrid::ParallelLayout& r) {
  return std::to_string(r.data) + "x" + std::to_string(r.pipeline) + "x" + std::to_string(r.tensor);
}

}  // namespace

std::string format_planning(const Planning& planning) {
  std::ostringstream out;
  out << "plan: " << planning.feasible.size() << " feasible layouts, fastest first (" << planning.machine;
  if (planning.budget_mib > 0) out << ", budget " << planning.budget_mib << " MiB per rank";
  out << ")\n";
  out << table_row("%3s  %-9s %5s %4s %4s  %9s  %8s %8s %8s %8s  %9s\n", "#", "DxPxT", "micro", "zero", "ckpt", "step ms",
             "compute", "comm", "bubble", "optim", "peak MiB");
  int rank = 0;
  for (const auto& p : planning.feasible) {
    const StepPrediction& s = p.predicted;
    out << table_row("%3d  %-9s %5lld %4d %4s  %9.2f  %8.2f %8.2f %8.2f %8.2f  %9.1f\n", ++rank,
               ranks_text(p.layout.ranks).c_str(), static_cast<long long>(p.layout.micro_batches),
               p.layout.zero_stage, p.layout.checkpointing ? "yes" : "no", s.step_ms(), s.compute_ms,
               s.exposed_comm_ms, s.bubble_ms, s.optimizer_ms, static_cast<double>(s.peak_bytes()) / kTableMiB);
  }
  if (!planning.feasible.empty()) {
    out << "best: " << planning.feasible.front().layout.to_string() << "\n  ";
    for (const auto& o : planning.feasible.front().layout.overrides()) out << " --set " << o;
    out << "\n";
  }
  if (!planning.dropped.empty()) {
    // One line per reason, with the layouts it dropped.
    std::map<std::string, std::vector<std::string>> by_reason;
    std::vector<std::string> order;
    for (const auto& d : planning.dropped) {
      if (!by_reason.count(d.why)) order.push_back(d.why);
      by_reason[d.why].push_back(ranks_text(d.layout.ranks) + " zero " + std::to_string(d.layout.zero_stage) +
                                 " micro " + std::to_string(d.layout.micro_batches) +
                                 (d.layout.checkpointing ? " ckpt" : ""));
    }
    out << "dropped " << planning.dropped.size() << " layouts:\n";
    for (const auto& why : order) {
      const auto& layouts = by_reason[why];
      out << "  " << layouts.front();
      if (layouts.size() > 1) out << " and " << layouts.size() - 1 << " more";
      out << ": " << why << "\n";
    }
  }
  return out.str();
}

std::string planning_json(const Planning& planning, int nproc) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& p : planning.feasible) {
    const StepPrediction& s = p.predicted;
    list.push_back({{"overrides", p.layout.overrides()},
                    {"nproc", nproc},
                    {"layout", p.layout.to_string()},
                    {"data", p.layout.ranks.data},
                    {"pipeline", p.layout.ranks.pipeline},
                    {"tensor", p.layout.ranks.tensor},
                    {"zero_stage", p.layout.zero_stage},
                    {"micro_batches", p.layout.micro_batches},
                    {"checkpointing", p.layout.checkpointing},
                    {"predicted_step_ms", s.step_ms()},
                    {"predicted_compute_ms", s.compute_ms},
                    {"predicted_exposed_comm_ms", s.exposed_comm_ms},
                    {"predicted_bubble_ms", s.bubble_ms},
                    {"predicted_optimizer_ms", s.optimizer_ms},
                    {"predicted_peak_mib", static_cast<double>(s.peak_bytes()) / kTableMiB},
                    {"stage_bounds", s.stage_bounds}});
  }
  return list.dump(1);
}

}  // namespace paisoar::plan
