// RunHistory: one run directory as `paisoar report` reads it: the records of
// metrics.jsonl in step order (a resumed run's records replace those of the
// run it resumed, so the curves are continuous by step), each run's start and
// config, the profiler's advice, the Chrome traces beside it, and what was
// wrong with the file (torn lines, mixed configs) as warnings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace paisoar::report {

struct RunStart {
  int64_t step = 0;
  int world_size = 0;
  double time = 0;  // seconds since the Unix epoch
  std::string config;
};

struct Finding {
  std::string verdict, evidence, action;
};

struct RunHistory {
  std::string dir;    // as given
  std::string name;   // its last path component, to label curves
  std::vector<nlohmann::json> steps;  // training records, one per step, ascending
  std::vector<nlohmann::json> evals;  // evaluation records, one per step, ascending
  std::vector<RunStart> starts;       // in file order
  std::vector<Finding> advice;        // the last run's profiler verdicts
  bool advised = false;               // an advice record was found (it may hold no finding)
  std::vector<std::string> traces;    // Chrome trace files in dir (trace-rank*.json), sorted
  std::vector<std::string> warnings;  // each names the file (and line) it is about
};

// Reads `dir`. Throws c10::ValueError naming the path when it is not a
// directory, holds no metrics.jsonl, or holds no training or evaluation
// record. A line that does not parse (a killed run cuts its last one) is
// skipped with a warning.
RunHistory read_run(const std::string& dir);

// The number at `key` of `record` ("loss", or "phases_ms.forward" a level
// down); NaN when it is absent or not a number.
double number_at(const nlohmann::json& record, const std::string& key);

}  // namespace paisoar::report
