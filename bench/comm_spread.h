// `paisoar bench comm --repeat N`: the whole benchmark launched N times, each
// a fresh set of ranks (fresh placement on the cores, fresh segments), and
// each row's spread over the launches: per side the median, fastest and
// slowest time; per peer the ratio peer/paisoar of every launch, of which the
// worst (lowest) is what a target is held to. Runs on the launcher's side:
// the children are `paisoar bench comm` without --repeat.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace paisoar::bench {

// Combines the JSON files of N launches (comm_table.h's format, same rows)
// into {"launches": N, "sides": [...], "title": ..., "rows": [{"bytes", "op",
// "seconds": {side: [per launch]}, "ratio": {peer: {"worst", "median",
// "best", "per_launch": [...]}}}]}. Throws std::runtime_error when the
// launches measured different rows.
nlohmann::json combine_launches(const std::vector<nlohmann::json>& launches);

// The table of a combined result, for the terminal.
std::string spread_table(const nlohmann::json& combined);

// The arguments of one launch: `argv` (after the program name) without
// --repeat N and --json FILE (either spelling, "--flag=value" too), with
// `--json <json>` added.
std::vector<std::string> launch_arguments(const std::vector<std::string>& argv, const std::string& json);

}  // namespace paisoar::bench
