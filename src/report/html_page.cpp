// html_page: sections in reading order; every text from the run is escaped.
#include "src/report/html_page.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "src/report/svg.h"

namespace paisoar::report {
namespace {

constexpr double kPlotWidth = 620, kPlotHeight = 340;

constexpr const char* kStyle = R"(
body { font-family: "DejaVu Sans", Arial, sans-serif; margin: 24px; color: #222; background: #f6f7f9; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 10px; }
.sub { color: #666; margin: 0 0 16px; }
table { border-collapse: collapse; background: #fff; } td, th { border: 1px solid #ddd; padding: 4px 10px; text-align: right; }
th { background: #eef0f3; } td:first-child, th:first-child { text-align: left; }
.warnings { background: #fff6db; border: 1px solid #e8c55a; padding: 8px 14px; margin: 14px 0; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; }
.plot { display: flex; gap: 10px; background: #fff; border: 1px solid #ddd; padding: 6px; }
.advice { width: 280px; font-size: 13px; }
.finding { border-left: 4px solid #d62728; background: #fdf0f0; padding: 6px 8px; margin-bottom: 8px; }
.finding b { text-transform: capitalize; }
pre { background: #fff; border: 1px solid #ddd; padding: 10px; overflow-x: auto; font-size: 12px; }
)";

// `v` with `digits` after the point (-1: 4 significant digits), "-" when not finite.
std::string fixed(double v, int digits = -1, const char* suffix = "") {
  if (!std::isfinite(v)) return "-";
  char text[48];
  if (digits < 0) {
    std::snprintf(text, sizeof(text), "%.4g", v);
  } else {
    std::snprintf(text, sizeof(text), "%.*f", digits, v);
  }
  return text + std::string(suffix);
}

std::string duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  const long s = std::lround(seconds);
  char text[32];
  std::snprintf(text, sizeof(text), "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  return text;
}

std::string finding_html(const Finding& f) {
  return "<div class=\"finding\"><b>" + escape_xml(f.verdict) + "</b><br>" + escape_xml(f.evidence) +
         "<br><i>" + escape_xml(f.action) + "</i></div>";
}

void summary_table(std::ostringstream& out, const std::vector<RunHistory>& runs) {
  out << "<table><tr><th>run</th><th>logged steps</th><th>starts</th><th>ranks</th><th>last loss</th>"
         "<th>last accuracy</th><th>best accuracy</th><th>samples/s</th><th>wall time</th></tr>\n";
  for (const auto& run : runs) {
    const nlohmann::json none = nlohmann::json::object();
    const auto& first = run.steps.empty() ? none : run.steps.front();
    const auto& last = run.steps.empty() ? none : run.steps.back();
    double best = NAN, last_accuracy = NAN, end_time = number_at(last, "time");
    for (const auto& e : run.evals) {
      last_accuracy = number_at(e, "accuracy");
      best = std::isfinite(best) ? std::max(best, last_accuracy) : last_accuracy;
      end_time = std::isfinite(end_time) ? std::max(end_time, number_at(e, "time")) : number_at(e, "time");
    }
    const double begin_time = run.starts.empty() ? number_at(first, "time") : run.starts.front().time;
    out << "<tr><td>" << escape_xml(run.name) << "</td><td>" << fixed(number_at(first, "step"), 0) << " - "
        << fixed(number_at(last, "step"), 0) << "</td><td>" << std::max<size_t>(run.starts.size(), 1)
        << "</td><td>" << (run.starts.empty() ? std::string("-") : std::to_string(run.starts.back().world_size))
        << "</td><td>" << fixed(number_at(last, "loss")) << "</td><td>" << fixed(last_accuracy, 2, "%")
        << "</td><td>" << fixed(best, 2, "%") << "</td><td>" << fixed(number_at(last, "samples_per_s"), 0)
        << "</td><td>" << duration(end_time - begin_time) << "</td></tr>\n";
  }
  out << "</table>\n";
}

void traces(std::ostringstream& out, const PageParts& parts) {
  bool any = false;
  for (const auto& run : parts.runs) any = any || !run.traces.empty();
  if (!any) {
    out << "<p>No Chrome trace in these runs: set <code>profiler.trace_start_step</code> (and "
           "<code>profiler.trace_steps</code>) to record one.</p>\n";
    return;
  }
  out << "<p>Open a trace in <a href=\"https://ui.perfetto.dev\">Perfetto</a> (Open trace file; the file "
         "stays on your machine) or in <code>chrome://tracing</code>.</p><ul>\n";
  namespace fs = std::filesystem;
  for (const auto& run : parts.runs) {
    for (const auto& t : run.traces) {
      const std::string link =
          fs::relative(fs::absolute(fs::path(run.dir) / t), fs::absolute(parts.html_dir)).generic_string();
      out << "<li><a href=\"" << escape_xml(link) << "\">" << escape_xml(run.name + "/" + t) << "</a></li>\n";
    }
  }
  out << "</ul>\n";
}

void configs(std::ostringstream& out, const std::vector<RunHistory>& runs) {
  for (const auto& run : runs) {
    std::vector<const RunStart*> shown;
    for (const auto& start : run.starts) {
      if (start.config.empty()) continue;
      if (std::any_of(shown.begin(), shown.end(), [&](const RunStart* s) { return s->config == start.config; })) {
        continue;
      }
      shown.push_back(&start);
    }
    if (shown.empty()) {
      out << "<p>" << escape_xml(run.name) << ": metrics.jsonl records no config (written before paisoar "
          << "recorded it).</p>\n";
    }
    for (const RunStart* s : shown) {
      out << "<details" << (shown.size() == 1 && runs.size() == 1 ? " open" : "") << "><summary>"
          << escape_xml(run.name) << ": config of the run started at step " << s->step << "</summary><pre>"
          << escape_xml(s->config) << "</pre></details>\n";
    }
  }
}

}  // namespace

std::string html_page(const PageParts& parts) {
  std::string names;
  for (const auto& run : parts.runs) names += (names.empty() ? "" : ", ") + run.name;
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>paisoar report: "
      << escape_xml(names) << "</title><style>" << kStyle << "</style></head><body>\n";
  out << "<h1>paisoar report: " << escape_xml(names) << "</h1>\n<p class=\"sub\">";
  for (const auto& run : parts.runs) out << escape_xml(run.dir) << "/metrics.jsonl ";
  if (!parts.png_name.empty()) {
    out << "&middot; main plots as <a href=\"" << escape_xml(parts.png_name) << "\">" << escape_xml(parts.png_name)
        << "</a>";
  }
  out << "</p>\n";
  summary_table(out, parts.runs);

  std::vector<std::string> warnings;
  for (const auto& run : parts.runs) warnings.insert(warnings.end(), run.warnings.begin(), run.warnings.end());
  if (!warnings.empty()) {
    out << "<div class=\"warnings\"><b>Read with care</b><ul>\n";
    for (const auto& w : warnings) out << "<li>" << escape_xml(w) << "</li>\n";
    out << "</ul></div>\n";
  }
  bool healthy = true;
  for (const auto& run : parts.runs) healthy = healthy && run.advised && run.advice.empty();
  if (healthy) out << "<p>The profiler found nothing to change in " << escape_xml(names) << ".</p>\n";
  if (!parts.unplaced.empty()) {
    out << "<h2>Advice</h2>\n";
    for (const auto& f : parts.unplaced) out << finding_html(f) << "\n";
  }

  out << "<h2>Plots</h2>\n<div class=\"plots\">\n";
  for (const auto& plot : parts.plots) {
    out << "<div class=\"plot\">" << to_svg(lay_out(plot.chart, kPlotWidth, kPlotHeight), plot.chart.title);
    if (!plot.advice.empty()) {
      out << "<div class=\"advice\">";
      for (const auto& f : plot.advice) out << finding_html(f);
      out << "</div>";
    }
    out << "</div>\n";
  }
  out << "</div>\n<h2>Traces</h2>\n";
  traces(out, parts);
  out << "<h2>Config</h2>\n";
  configs(out, parts.runs);
  out << "</body></html>\n";
  return out.str();
}

}  // namespace paisoar::report
