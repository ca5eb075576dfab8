// Printing a partition plan (one line per stage) and the unit formatting it uses.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "paisoar/pipeline/partition.h"
#include "src/pipeline/format_units.h"

namespace paisoar::pipeline {
namespace detail {

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024 && bytes > -1024) return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  int unit = -1;
  while ((value >= 1024 || value <= -1024) && unit < 3) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", value, units[unit]);
  return buf;
}

std::string format_seconds(double seconds) {
  char buf[32];
  if (seconds < 1e-3) {
    std::snprintf(buf, sizeof buf, "%.0f us", seconds * 1e6);
  } else if (seconds < 1) {
    std::snprintf(buf, sizeof buf, "%.2f ms", seconds * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f s", seconds);
  }
  return buf;
}

}  // namespace detail

double PartitionPlan::max_time_s() const {
  double slowest = 0;
  for (const auto& s : stages) slowest = std::max(slowest, s.time_s);
  return slowest;
}

int PartitionPlan::slowest_stage() const {
  int slowest = 0;
  for (size_t s = 1; s < stages.size(); ++s) {
    if (stages[s].time_s > stages[slowest].time_s) slowest = static_cast<int>(s);
  }
  return slowest;
}

std::string PartitionPlan::to_string() const {
  std::ostringstream out;
  const int layers = stages.empty() ? 0 : stages.back().end;
  out << "pipeline plan: " << layers << " layers in " << stages.size() << " stages, slowest "
      << detail::format_seconds(max_time_s()) << " (stage " << slowest_stage() << ")";
  if (memory_limit_bytes > 0) out << ", memory limit " << detail::format_bytes(memory_limit_bytes);
  out << '\n';
  for (size_t s = 0; s < stages.size(); ++s) {
    const StagePlan& st = stages[s];
    char head[96];
    std::snprintf(head, sizeof head, "  stage %zu: layers %d-%d", s, st.begin, st.end - 1);
    out << head << "  time " << detail::format_seconds(st.time_s) << "  memory "
        << detail::format_bytes(st.memory_bytes);
    if (static_cast<int>(s) == slowest_stage()) out << "  <- slowest";
    std::string names;
    for (int i = st.begin; i < st.end && i < static_cast<int>(layer_names.size()); ++i) {
      if (layer_names[i].empty()) continue;
      names += (names.empty() ? "" : ", ") + layer_names[i];
    }
    if (!names.empty()) out << "  [" << names << "]";
    out << '\n';
  }
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const PartitionPlan& plan) {
  return out << plan.to_string();
}

}  // namespace paisoar::pipeline
