// write_report: what `paisoar report RUN_DIR...` makes of the metrics a
// Trainer run leaves (metrics.jsonl): one self-contained HTML page (inline
// SVG, no script, nothing fetched) with the run's curves, the step breakdown,
// per-rank times and memory, the profiler's advice beside the chart that
// shows it, the config and the Chrome traces; and a PNG of the main plots.
#pragma once

#include <string>
#include <vector>

namespace paisoar::report {

struct ReportOptions {
  std::string html_path;  // "": <first run dir>/report.html
  std::string png_path;   // "": the HTML path with .png for .html
};

struct ReportFiles {
  std::string html, png;
  std::vector<std::string> warnings;  // also shown on the page: torn lines, resumes, mixed configs
};

// Reads each run directory (report::read_run's errors: c10::ValueError naming
// the directory or file) and writes both files, each whole or not at all.
// Several runs share the curve charts, a series per run. Throws
// c10::ValueError for no run, c10::Error when a file cannot be written.
ReportFiles write_report(const std::vector<std::string>& run_dirs, const ReportOptions& options = {});

}  // namespace paisoar::report
