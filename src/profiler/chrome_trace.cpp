// Chrome Trace Event JSON from TraceSpans (see chrome_trace.h), written
// atomically so a viewer never opens half a file.
#include "paisoar/profiler/chrome_trace.h"

#include <nlohmann/json.hpp>

#include <set>

#include "src/util/atomic_file.h"

namespace paisoar::profiler {
namespace {

using nlohmann::json;

json metadata(const char* what, int rank, int row, const std::string& name) {
  return json{{"name", what}, {"ph", "M"}, {"pid", rank}, {"tid", row}, {"args", {{"name", name}}}};
}

std::string row_name(int row) {
  switch (row) {
    case kTrainingThreadRow: return "training";
    case kCommunicationRow: return "communication";
    default: return "row " + std::to_string(row);
  }
}

}  // namespace

std::string chrome_trace_json(const std::vector<TraceSpan>& spans, int rank) {
  json events = json::array();
  events.push_back(metadata("process_name", rank, 0, "rank " + std::to_string(rank)));
  std::set<int> rows;
  for (const auto& span : spans) rows.insert(span.row);
  for (int row : rows) events.push_back(metadata("thread_name", rank, row, row_name(row)));
  for (const auto& span : spans) {
    json event{{"name", span.name},
               {"cat", span.category},
               {"ph", "X"},
               {"ts", span.begin_s * 1e6},
               {"dur", (span.end_s - span.begin_s) * 1e6},
               {"pid", rank},
               {"tid", span.row}};
    if (!span.args.empty()) event["args"] = span.args;
    events.push_back(std::move(event));
  }
  json trace{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  return trace.dump(-1, ' ', false, json::error_handler_t::replace);
}

void write_chrome_trace(const std::string& path, const std::vector<TraceSpan>& spans, int rank) {
  util::AtomicFile file(path);
  file.write(chrome_trace_json(spans, rank));
  file.commit();
}

}  // namespace paisoar::profiler
