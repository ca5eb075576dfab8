// combine_launches, spread_table and launch_arguments (comm_spread.h).
#include "bench/comm_spread.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace paisoar::bench {
namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

nlohmann::json combine_launches(const std::vector<nlohmann::json>& launches) {
  if (launches.empty()) throw std::runtime_error("no launch to combine");
  const nlohmann::json& first = launches.front();
  const std::vector<std::string> sides = first.at("sides").get<std::vector<std::string>>();
  nlohmann::json out = {{"launches", launches.size()}, {"sides", sides}, {"title", first.value("title", "")},
                        {"world_size", first.value("world_size", 0)}, {"rows", nlohmann::json::array()}};
  const size_t rows = first.at("rows").size();
  for (const auto& l : launches) {
    if (l.at("rows").size() != rows) throw std::runtime_error("the launches measured different rows");
  }
  for (size_t i = 0; i < rows; ++i) {
    const nlohmann::json& head = first["rows"][i];
    nlohmann::json row = {{"bytes", head["bytes"]}, {"op", head["op"]}, {"seconds", nlohmann::json::object()},
                          {"ratio", nlohmann::json::object()}};
    std::vector<std::vector<double>> by_side(sides.size());
    for (const auto& l : launches) {
      const nlohmann::json& r = l["rows"][i];
      if (r["bytes"] != head["bytes"] || r["op"] != head["op"])
        throw std::runtime_error("the launches measured different rows");
      for (size_t s = 0; s < sides.size(); ++s) {
        if (r["seconds"].contains(sides[s])) by_side[s].push_back(r["seconds"][sides[s]].get<double>());
      }
    }
    for (size_t s = 0; s < sides.size(); ++s) {
      if (by_side[s].size() == launches.size()) row["seconds"][sides[s]] = by_side[s];
    }
    for (size_t s = 1; s < sides.size(); ++s) {
      if (by_side[s].size() != launches.size() || by_side[0].size() != launches.size()) continue;
      std::vector<double> ratios;
      for (size_t k = 0; k < launches.size(); ++k) ratios.push_back(by_side[s][k] / by_side[0][k]);
      row["ratio"][sides[s]] = {{"worst", *std::min_element(ratios.begin(), ratios.end())},
                                {"median", median_of(ratios)},
                                {"best", *std::max_element(ratios.begin(), ratios.end())},
                                {"per_launch", ratios}};
    }
    out["rows"].push_back(row);
  }
  return out;
}

std::string spread_table(const nlohmann::json& combined) {
  const std::vector<std::string> sides = combined.at("sides").get<std::vector<std::string>>();
  std::string text = combined.value("title", "") + "\n" + std::to_string(combined["launches"].get<int>()) +
                     " launches; " + sides.front() +
                     " us: median [fastest, slowest] of the launches' medians; per peer the ratio "
                     "peer/" + sides.front() + " (> 1: " + sides.front() + " faster), worst / median / best launch\n";
  char line[256];
  std::snprintf(line, sizeof(line), "%10s %-15s %24s", "bytes", "op", (sides.front() + " us").c_str());
  text += line;
  for (size_t s = 1; s < sides.size(); ++s) {
    std::snprintf(line, sizeof(line), " %22s", ("/" + sides[s] + " w/m/b").c_str());
    text += line;
  }
  text += "\n";
  for (const auto& row : combined["rows"]) {
    std::snprintf(line, sizeof(line), "%10lld %-15s", row["bytes"].get<long long>(),
                  row["op"].get<std::string>().c_str());
    text += line;
    if (row["seconds"].contains(sides.front())) {
      std::vector<double> v = row["seconds"][sides.front()].get<std::vector<double>>();
      std::snprintf(line, sizeof(line), " %9.1f [%6.1f, %6.1f]", median_of(v) * 1e6,
                    *std::min_element(v.begin(), v.end()) * 1e6, *std::max_element(v.begin(), v.end()) * 1e6);
    } else {
      std::snprintf(line, sizeof(line), " %24s", "-");
    }
    text += line;
    for (size_t s = 1; s < sides.size(); ++s) {
      if (row["ratio"].contains(sides[s])) {
        const auto& r = row["ratio"][sides[s]];
        std::snprintf(line, sizeof(line), " %6.2f / %5.2f / %5.2f", r["worst"].get<double>(),
                      r["median"].get<double>(), r["best"].get<double>());
      } else {
        std::snprintf(line, sizeof(line), " %22s", "-");
      }
      text += line;
    }
    text += "\n";
  }
  return text;
}

std::vector<std::string> launch_arguments(const std::vector<std::string>& argv, const std::string& json) {
  std::vector<std::string> out;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--repeat" || a == "--json") {
      ++i;  // and its value
      continue;
    }
    if (a.rfind("--repeat=", 0) == 0 || a.rfind("--json=", 0) == 0) continue;
    out.push_back(a);
  }
  out.push_back("--json");
  out.push_back(json);
  return out;
}

}  // namespace paisoar::bench
