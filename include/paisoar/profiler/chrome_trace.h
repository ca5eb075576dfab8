// Chrome Trace Event JSON: spans on a timeline, as chrome://tracing, Perfetto
// (ui.perfetto.dev) and Horovod's timeline use it. TraceSpan is what the step
// profiler collects; write_chrome_trace writes a list of them atomically.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace paisoar::profiler {

// Timeline rows ("tid") inside a rank's process row ("pid" = rank).
inline constexpr int kTrainingThreadRow = 0;  // steps and phases
inline constexpr int kCommunicationRow = 1;   // per-bucket communication, add_span's default

struct TraceSpan {
  std::string name;
  std::string category;           // "cat": "step", "phase", "communication", ...
  double begin_s = 0;             // seconds on the profiler's clock (steady_clock by default)
  double end_s = 0;               // >= begin_s
  int row = kTrainingThreadRow;   // "tid"
  std::map<std::string, double> args;  // shown when the span is selected
};

// {"traceEvents":[...], "displayTimeUnit":"ms"}: one complete ("ph":"X") event
// per span, "ts"/"dur" in microseconds, "pid" = rank, plus metadata events
// naming the process ("rank N") and the rows. Names need not be valid UTF-8
// (bad bytes are replaced).
std::string chrome_trace_json(const std::vector<TraceSpan>& spans, int rank);

// Writes chrome_trace_json to `path` through util::AtomicFile: readers see the
// old file or the whole new one. Throws c10::Error naming the path.
void write_chrome_trace(const std::string& path, const std::vector<TraceSpan>& spans, int rank);

}  // namespace paisoar::profiler
