// Which charts a report shows, built from the runs' histories: loss,
// accuracy, throughput, the step breakdown, learning rate, loss scale,
// gradient norm, per-rank step and busy time, memory per rank. Each comes
// with the profiler's findings it shows, to be placed beside it.
#pragma once

#include <vector>

#include "src/report/chart.h"
#include "src/report/run_history.h"

namespace paisoar::report {

struct Plot {
  Chart chart;
  std::vector<Finding> advice;  // the findings this chart shows
  bool headline = false;        // one of the main plots (the PNG's)
};

// Several runs share the curve charts (a series per run); the step
// breakdown and the per-rank charts are per run. Charts of figures no run
// logged are left out; a finding whose chart is missing goes to `unplaced`.
std::vector<Plot> plots_for(const std::vector<RunHistory>& runs, std::vector<Finding>& unplaced);

}  // namespace paisoar::report
