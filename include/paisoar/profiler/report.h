// The end-of-run report: a table of the step phases (ms per step, share of
// the step) followed by the advisor's verdicts and what to change.
#pragma once

#include <string>
#include <vector>

#include "paisoar/profiler/advisor.h"
#include "paisoar/profiler/profile_summary.h"

namespace paisoar::profiler {

// Text to print at the end of a run, ending in a newline. Phases with no time
// are listed too (a zero says "not measured / not spent"); "(untracked)" is
// step time no phase covers. Without advice it says no bottleneck was found.
std::string format_report(const ProfileSummary& summary, const std::vector<Advice>& advice);

}  // namespace paisoar::profiler
