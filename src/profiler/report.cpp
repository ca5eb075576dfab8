// format_report: the phase table and the advice as plain text (see report.h).
#include "paisoar/profiler/report.h"

#include <cstdio>

namespace paisoar::profiler {
namespace {

std::string row(const char* name, double mean_s, double fraction) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "  %-15s %10.2f %6.1f\n", name, 1e3 * mean_s, 100 * fraction);
  return buf;
}

}  // namespace

std::string format_report(const ProfileSummary& summary, const std::vector<Advice>& advice) {
  std::string out;
  char buf[192];
  std::snprintf(buf, sizeof buf,
                "Step profile: %lld steps, %.2f ms/step (min %.2f, max %.2f)\n",
                static_cast<long long>(summary.steps), 1e3 * summary.step_mean_s,
                1e3 * summary.step_min_s, 1e3 * summary.step_max_s);
  out += buf;
  std::snprintf(buf, sizeof buf, "  %-15s %10s %6s\n", "phase", "ms/step", "%");
  out += buf;
  for (size_t p = 0; p < kPhaseCount; ++p) {
    out += row(phase_name(static_cast<Phase>(p)), summary.phases[p].mean_s,
               summary.phases[p].fraction);
  }
  const double untracked_fraction =
      summary.step_total_s > 0 ? summary.untracked_total_s / summary.step_total_s : 0;
  out += row("(untracked)", summary.untracked_mean_s, untracked_fraction);

  if (advice.empty()) {
    out += "Advice: no bottleneck found (data wait, exposed communication, loss scale and rank "
           "balance are within their limits).\n";
    return out;
  }
  out += "Advice:\n";
  for (const auto& a : advice) {
    out += "  [" + a.verdict + "] " + a.evidence + "\n";
    out += "    -> " + a.action + "\n";
  }
  return out;
}

}  // namespace paisoar::profiler
