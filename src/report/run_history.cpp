// read_run: one pass over metrics.jsonl. A run_start record at step s drops
// the records past s that the file already holds (the killed run's steps the
// resumed one repeats); later records of a step replace earlier ones.
#include "src/report/run_history.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "src/util/input_file.h"
#include "src/util/json_text.h"

namespace paisoar::report {
namespace {

namespace fs = std::filesystem;

// Longer lines are not records paisoar train wrote (a config is a few KB).
constexpr size_t kMaxLine = 1 << 20;

// Records by step; a resume at `step` forgets what came after it.
class ByStep {
 public:
  void put(const nlohmann::json& record) { records_[record.at("step").get<int64_t>()] = record; }
  size_t drop_after(int64_t step) {
    size_t dropped = 0;
    for (auto it = records_.upper_bound(step); it != records_.end(); it = records_.erase(it)) ++dropped;
    return dropped;
  }
  std::vector<nlohmann::json> values() const {
    std::vector<nlohmann::json> out;
    for (const auto& [step, record] : records_) out.push_back(record);
    return out;
  }

 private:
  std::map<int64_t, nlohmann::json> records_;
};

std::vector<std::string> trace_files(const fs::path& dir) {
  std::vector<std::string> traces;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("trace-rank", 0) == 0 && entry.path().extension() == ".json") traces.push_back(name);
  }
  std::sort(traces.begin(), traces.end());
  return traces;
}

void note_mixed_configs(RunHistory& run, const std::string& file) {
  std::vector<const RunStart*> distinct;
  for (const auto& start : run.starts) {
    const bool seen = std::any_of(distinct.begin(), distinct.end(),
                                  [&](const RunStart* d) { return d->config == start.config; });
    if (!seen) distinct.push_back(&start);
  }
  if (distinct.size() < 2) return;
  std::string steps;
  for (const RunStart* d : distinct) steps += (steps.empty() ? "" : ", ") + std::to_string(d->step);
  run.warnings.push_back(file + " holds runs of " + std::to_string(distinct.size()) +
                         " different configs (starting at steps " + steps +
                         "); their curves are joined by step: compare the configs below, or give each "
                         "config its own run_dir");
}

// The fields the report reads as numbers; paisoar train writes each as a
// number or null (no value; nlohmann's parser refuses numbers past double's range).
constexpr const char* kNumericFields[] = {"step", "epoch", "loss", "lr", "samples_per_s", "time", "world_size",
                                          "accuracy"};

void require_numbers(const nlohmann::json& record) {
  for (const char* key : kNumericFields) {
    const auto it = record.find(key);
    if (it == record.end() || it->is_null()) continue;
    if (!it->is_number()) {
      throw util::JsonTextError(std::string("\"") + key + "\" is " + util::json_kind(*it) + ", not a number");
    }
  }
}

// `object[key]` as text ("" when absent or null); the field named otherwise.
std::string text_of(const nlohmann::json& object, const std::string& key, const std::string& name) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "";
  if (!it->is_string()) throw util::JsonTextError(name + " is " + util::json_kind(*it) + ", not a string");
  return it->get<std::string>();
}

// An "advice" record's list of findings, each field read as text.
std::vector<Finding> advice_of(const nlohmann::json& record) {
  std::vector<Finding> advice;
  const auto it = record.find("advice");
  if (it == record.end() || it->is_null()) return advice;
  if (!it->is_array()) throw util::JsonTextError("\"advice\" is " + util::json_kind(*it) + ", not a list");
  for (size_t i = 0; i < it->size(); ++i) {
    const auto& a = (*it)[i];
    const std::string name = "\"advice\" entry " + std::to_string(i + 1);
    if (!a.is_object()) throw util::JsonTextError(name + " is " + util::json_kind(a) + ", not an object");
    advice.push_back(Finding{text_of(a, "verdict", name + "'s \"verdict\""),
                             text_of(a, "evidence", name + "'s \"evidence\""),
                             text_of(a, "action", name + "'s \"action\"")});
  }
  return advice;
}

// run_start's "world_size": an integer that fits an int (1e87 or 2.5 is a
// field of the wrong type; converting it would be undefined behaviour).
int world_size_of(const nlohmann::json& record) {
  const auto it = record.find("world_size");
  if (it == record.end() || it->is_null()) return 0;
  const int64_t n = util::json_integer(*it, "\"world_size\"");
  if (n < 0 || n > std::numeric_limits<int>::max()) {
    throw util::JsonTextError("\"world_size\" must be a count of ranks, got " + std::to_string(n));
  }
  return static_cast<int>(n);
}

// One record that parsed, by its event. Throws nlohmann::json::exception or
// util::JsonTextError for a field of the wrong type, before anything changed.
void take_record(const nlohmann::json& record, const std::string& file, size_t line_number, RunHistory& run,
                 ByStep& steps, ByStep& evals) {
  require_numbers(record);
  const std::string event = text_of(record, "event", "\"event\"");
  const int64_t step = util::json_integer(record["step"], "\"step\"");
  if (event == "run_start") {
    const auto time = record.find("time");  // a number or null (require_numbers)
    const RunStart start{step, world_size_of(record), time == record.end() || time->is_null() ? 0.0 : time->get<double>(),
                         text_of(record, "config", "\"config\"")};
    const size_t dropped = steps.drop_after(step) + evals.drop_after(step);
    if (dropped > 0) {
      run.warnings.push_back(file + ":" + std::to_string(line_number) + ": resumed at step " + std::to_string(step) +
                             "; " + std::to_string(dropped) +
                             " earlier records past it are replaced by the resumed run's");
    }
    run.starts.push_back(start);
  } else if (event == "advice") {
    run.advice = advice_of(record);
    run.advised = true;
  } else if (record.contains("accuracy")) {
    evals.put(record);
  } else if (record.contains("loss")) {
    steps.put(record);
  }
}

}  // namespace

double number_at(const nlohmann::json& record, const std::string& key) {
  const nlohmann::json* at = &record;
  size_t begin = 0;
  while (true) {
    const size_t dot = key.find('.', begin);
    const std::string part = key.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
    if (!at->is_object() || !at->contains(part)) return std::numeric_limits<double>::quiet_NaN();
    at = &(*at)[part];
    if (dot == std::string::npos) break;
    begin = dot + 1;
  }
  return at->is_number() ? at->get<double>() : std::numeric_limits<double>::quiet_NaN();
}

RunHistory read_run(const std::string& dir) {
  const fs::path root(dir);
  if (!fs::is_directory(root)) {
    C10_THROW_ERROR(ValueError, "paisoar report: " + dir + " is not a directory; pass a run's run_dir");
  }
  const std::string file = (root / "metrics.jsonl").string();
  std::error_code missing;
  if (!fs::exists(file, missing)) {
    C10_THROW_ERROR(ValueError, "paisoar report: " + file +
                                    " does not exist; pass the run_dir a paisoar train run wrote its metrics to");
  }
  util::InputFile in(file, "metrics file");  // a FIFO or device is refused, never waited on
  RunHistory run;
  run.dir = dir;
  run.name = fs::absolute(root).lexically_normal().filename().string();
  if (run.name.empty()) run.name = fs::absolute(root).lexically_normal().parent_path().filename().string();
  ByStep steps, evals;
  size_t line_number = 0, torn = 0, mistyped = 0;
  // A field of the wrong type: the file was edited or written by another program.
  const auto skip_mistyped = [&](const std::string& why) {
    if (mistyped++ == 0) {
      run.warnings.push_back(file + ":" + std::to_string(line_number) + ": a record with a field of the wrong type " +
                             "was skipped (" + why + "; paisoar train did not write it so: the file was edited or "
                             "written by another program)");
    }
  };
  std::string line;
  bool cut = false;
  while (in.read_line(line, kMaxLine, &cut)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json record =
        cut ? nlohmann::json() : nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!record.is_object() || !record.contains("step") || !record["step"].is_number_integer()) {
      if (torn++ == 0) {
        run.warnings.push_back(file + ":" + std::to_string(line_number) +
                               (cut ? ": a line longer than " + std::to_string(kMaxLine) + " bytes was skipped"
                                    : ": a torn or unreadable line was skipped (a killed run cuts its last one)"));
      }
      continue;
    }
    try {
      take_record(record, file, line_number, run, steps, evals);
    } catch (const nlohmann::json::exception& e) {  // a field read above did not foresee: quoted after ours
      skip_mistyped("a field could not be read: " + util::json_error_text(e));
    } catch (const util::JsonTextError& e) {
      skip_mistyped(e.what());
    }
  }
  if (mistyped > 1) {
    run.warnings.push_back(file + ": " + std::to_string(mistyped) + " records with fields of the wrong type were skipped in all");
  }
  if (torn > 1) {
    run.warnings.push_back(file + ": " + std::to_string(torn) + " torn or unreadable lines were skipped in all");
  }
  run.steps = steps.values();
  run.evals = evals.values();
  if (run.steps.empty() && run.evals.empty()) {
    C10_THROW_ERROR(ValueError, "paisoar report: " + file +
                                    " holds no training or evaluation record yet; run (or let the run reach) "
                                    "its first logged step (train.log_every)");
  }
  note_mixed_configs(run, file);
  run.traces = trace_files(root);
  return run;
}

}  // namespace paisoar::report
