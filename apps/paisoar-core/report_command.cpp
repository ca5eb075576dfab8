// `paisoar report RUN_DIR [RUN_DIR...]`: a run's metrics as a self-contained
// HTML page and a PNG of its main plots (report::write_report); with several
// runs, their curves side by side in the same charts.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "apps/paisoar-core/commands.h"
#include "paisoar/report/run_report_page.h"

namespace paisoar::app {

Command add_report_command(CLI::App& app) {
  struct Args {
    std::vector<std::string> runs;
    report::ReportOptions options;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("report", "a run's metrics as an HTML page with plots, and a PNG");
  cmd->add_option("runs", a->runs, "run directories (a config's run_dir, holding metrics.jsonl)")->required();
  cmd->add_option("--html", a->options.html_path, "the page to write (default: <first run>/report.html)");
  cmd->add_option("--png", a->options.png_path, "the PNG of the main plots (default: the page's path, .png)");
  return [a](int, char**) {
    const auto files = report::write_report(a->runs, a->options);
    for (const auto& w : files.warnings) std::fprintf(stderr, "paisoar report: warning: %s\n", w.c_str());
    std::printf("paisoar report: %s\npaisoar report: %s\n", files.html.c_str(), files.png.c_str());
    return 0;
  };
}

}  // namespace paisoar::app
