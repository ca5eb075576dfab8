// The report's HTML text: a summary table per run, the warnings, each plot
// as inline SVG with its findings beside it, the traces and the configs.
// No script and no external resource: the file opens anywhere, offline.
#pragma once

#include <string>
#include <vector>

#include "src/report/run_charts.h"
#include "src/report/run_history.h"

namespace paisoar::report {

struct PageParts {
  const std::vector<RunHistory>& runs;
  const std::vector<Plot>& plots;
  const std::vector<Finding>& unplaced;  // findings without a chart of theirs
  std::string html_dir;                  // where the page is written (links are relative to it)
  std::string png_name;                  // the PNG beside the page ("" : none)
};

std::string html_page(const PageParts& parts);

}  // namespace paisoar::report
