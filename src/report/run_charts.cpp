// plots_for: each chart reads its fields from the records by name (the keys
// RunReport writes to metrics.jsonl); findings go by verdict to the chart
// where they can be seen.
#include "src/report/run_charts.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "paisoar/profiler/advisor.h"

namespace paisoar::report {
namespace {

using Field = std::function<double(const nlohmann::json&)>;

Field key(const std::string& name) {
  return [name](const nlohmann::json& r) { return number_at(r, name); };
}

Series series_of(const std::vector<nlohmann::json>& records, const Field& field, std::string label, Rgb color) {
  Series s{std::move(label), color, {}};
  for (const auto& r : records) s.points.push_back({number_at(r, "step"), field(r)});
  return s;
}

// One series per run (labelled by the run's name when there are several).
Chart across_runs(const std::vector<RunHistory>& runs, std::string title, std::string y_label, const Field& field,
                  bool evals = false) {
  Chart c;
  c.title = std::move(title);
  c.y_label = std::move(y_label);
  for (size_t i = 0; i < runs.size(); ++i) {
    c.series.push_back(series_of(evals ? runs[i].evals : runs[i].steps, field,
                                 runs.size() > 1 ? runs[i].name : "", palette(i)));
  }
  return c;
}

std::string titled(const std::string& title, const RunHistory& run, size_t runs) {
  return runs > 1 ? title + ": " + run.name : title;
}

Rgb phase_color(const std::string& phase) {
  static const std::map<std::string, Rgb> kColors = {
      {"data_wait", {214, 39, 40}}, {"forward", {31, 119, 180}},   {"backward", {44, 160, 44}},
      {"communication", {255, 127, 14}}, {"optimizer", {148, 103, 189}}, {"other", {160, 160, 160}}};
  const auto it = kColors.find(phase);
  return it == kColors.end() ? Rgb{127, 127, 127} : it->second;
}

// The profiler's phases when the run logged them; otherwise what every
// record has: data wait, exposed communication and the rest of the step.
Chart breakdown(const RunHistory& run, size_t runs) {
  Chart c;
  c.title = titled("Step time breakdown", run, runs);
  c.y_label = "ms per step";
  c.stacked = true;
  const bool phases = !run.steps.empty() && run.steps.back().contains("phases_ms");
  if (phases) {
    for (const char* p : {"data_wait", "forward", "backward", "communication", "optimizer", "other"}) {
      c.series.push_back(series_of(run.steps, key(std::string("phases_ms.") + p), p, phase_color(p)));
    }
    return c;
  }
  c.series.push_back(series_of(run.steps, key("data_wait_ms"), "data_wait", phase_color("data_wait")));
  c.series.push_back(series_of(run.steps, key("exposed_comm_ms"), "communication", phase_color("communication")));
  c.series.push_back(series_of(
      run.steps,
      [](const nlohmann::json& r) {
        return std::max(0.0, number_at(r, "ms_per_step") - number_at(r, "data_wait_ms") -
                                 number_at(r, "exposed_comm_ms"));
      },
      "compute and other", phase_color("other")));
  return c;
}

// One series per rank of ranks.<field>; no series when the run has none.
Chart per_rank(const RunHistory& run, size_t runs, const std::string& title, const std::string& y_label,
               const std::string& field) {
  Chart c;
  c.title = titled(title, run, runs);
  c.y_label = y_label;
  size_t ranks = 0;
  for (const auto& r : run.steps) {
    if (r.contains("ranks") && r["ranks"].contains(field)) ranks = std::max(ranks, r["ranks"][field].size());
  }
  for (size_t rank = 0; rank < ranks; ++rank) {
    c.series.push_back(series_of(
        run.steps,
        [&field, rank](const nlohmann::json& r) {
          if (!r.contains("ranks") || !r["ranks"].contains(field) || r["ranks"][field].size() <= rank) {
            return std::nan("");
          }
          const auto& v = r["ranks"][field][rank];
          return v.is_number() && v.get<double>() >= 0 ? v.get<double>() : std::nan("");
        },
        "rank " + std::to_string(rank), palette(rank)));
  }
  return c;
}

bool varies_from_one(const std::vector<RunHistory>& runs, const std::string& name) {
  for (const auto& run : runs) {
    for (const auto& r : run.steps) {
      const double v = number_at(r, name);
      if (std::isfinite(v) && v != 1) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<Plot> plots_for(const std::vector<RunHistory>& runs, std::vector<Finding>& unplaced) {
  std::vector<Plot> plots;
  const auto add = [&](Chart chart, bool headline) {
    if (chart.has_data()) plots.push_back(Plot{std::move(chart), {}, headline});
  };
  add(across_runs(runs, "Training loss", "loss", key("loss")), true);
  Chart accuracy = across_runs(runs, "Test accuracy", "accuracy (%)", key("accuracy"), true);
  accuracy.markers = true;
  for (const auto& run : runs) {
    if (run.steps.empty()) continue;
    const double first = number_at(run.steps.front(), "step"), last = number_at(run.steps.back(), "step");
    accuracy.x_from = std::isnan(accuracy.x_from) ? first : std::min(accuracy.x_from, first);
    accuracy.x_to = std::isnan(accuracy.x_to) ? last : std::max(accuracy.x_to, last);
  }
  add(std::move(accuracy), true);
  add(across_runs(runs, "Throughput", "samples per second", key("samples_per_s")), true);
  for (const auto& run : runs) add(breakdown(run, runs.size()), &run == &runs.front());
  add(across_runs(runs, "Learning rate", "lr", key("lr")), false);
  if (varies_from_one(runs, "loss_scale")) {
    Chart scale = across_runs(runs, "Loss scale", "scale", key("loss_scale"));
    scale.log_y = true;
    add(std::move(scale), false);
  }
  add(across_runs(runs, "Gradient norm (before clipping)", "L2 norm", key("grad_norm")), false);
  for (const auto& run : runs) {
    add(per_rank(run, runs.size(), "Per-rank step time", "ms per step", "step_ms"), false);
    add(per_rank(run, runs.size(), "Per-rank busy time (step less communication waited on)", "ms per step",
                 "busy_ms"),
        false);
    add(per_rank(run, runs.size(), "Resident memory per rank", "MiB", "resident_mb"), false);
    add(per_rank(run, runs.size(), "Device memory allocated per rank", "MiB", "allocated_mb"), false);
  }

  // Each finding beside the first chart of its kind in the first run that found it.
  const auto chart_for = [&](const std::string& verdict) -> Plot* {
    std::string prefix = "Step time breakdown";
    if (verdict == profiler::kUnstableLossScale) prefix = "Loss scale";
    if (verdict == profiler::kStraggler) prefix = "Per-rank busy time";
    for (auto& p : plots) {
      if (p.chart.title.rfind(prefix, 0) == 0) return &p;
    }
    return nullptr;
  };
  for (const auto& run : runs) {
    for (const auto& finding : run.advice) {
      Plot* plot = chart_for(finding.verdict);
      Finding f = finding;
      if (runs.size() > 1) f.verdict = run.name + ": " + f.verdict;
      if (plot) {
        plot->advice.push_back(std::move(f));
      } else {
        unplaced.push_back(std::move(f));
      }
    }
  }
  return plots;
}

}  // namespace paisoar::report
