// CostCache: read whole or not at all, written through a temporary file.
#include "src/plan/cost_cache.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "paisoar/error.h"
#include "src/util/atomic_file.h"

namespace paisoar::plan {
namespace {

constexpr const char* kFormat = "paisoar-plan-costs/1";

bool measured(const nlohmann::json& v) {
  return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0;
}

// Every value in the file is one a measurement could give.
std::string problem_in(const nlohmann::json& j) {
  if (!j.is_object() || j.value("format", "") != kFormat) return "it is not a cost cache of this paisoar";
  for (const char* section : {"layers", "comm", "numbers"}) {
    if (!j.contains(section) || !j[section].is_object()) return std::string("it has no '") + section + "' section";
  }
  for (const auto& [key, rows] : j["layers"].items()) {
    if (!rows.is_array() || rows.empty()) return "its layers of " + key + " are not a list";
    for (const auto& r : rows) {
      for (const char* f : {"time_s", "forward_s", "parameter_bytes", "activation_bytes", "output_bytes"}) {
        if (!r.is_object() || !r.contains(f) || !measured(r[f])) return "a layer of " + key + " has a bad " + f;
      }
    }
  }
  for (const auto& [key, fits] : j["comm"].items()) {
    if (!fits.is_object() || fits.empty()) return "its costs of " + key + " are not a table";
    for (const auto& [op, fit] : fits.items()) {
      if (!fit.is_array() || fit.size() != 2 || !measured(fit[0]) || !measured(fit[1])) {
        return "the " + op + " cost of " + key + " is not two measured numbers";
      }
    }
  }
  for (const auto& [key, values] : j["numbers"].items()) {
    if (!values.is_array()) return "the values of " + key + " are not a list";
    for (const auto& v : values) {
      if (!measured(v)) return "a value of " + key + " is not a measured number";
    }
  }
  return "";
}

nlohmann::json empty_cache() {
  return {{"format", kFormat}, {"layers", nlohmann::json::object()}, {"comm", nlohmann::json::object()},
          {"numbers", nlohmann::json::object()}};
}

Collective collective_named(const std::string& name) {
  for (Collective op : {Collective::Allreduce, Collective::Allgather, Collective::ReduceScatter, Collective::Send}) {
    if (name == to_string(op)) return op;
  }
  throw std::out_of_range(name);
}

}  // namespace

CostCache::CostCache(std::string path, std::ostream& warn) : path_(std::move(path)), warn_(warn), json_(empty_cache()) {
  if (path_.empty() || !std::filesystem::exists(path_)) return;
  std::ifstream in(path_);
  std::stringstream text;
  text << in.rdbuf();
  std::string why;
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  why = j.is_discarded() ? "it is not JSON" : problem_in(j);
  if (!why.empty()) {
    warn_ << "paisoar plan: warning: ignoring the cost cache " << path_ << " (" << why
          << "); measuring again and writing it anew\n";
    changed_ = true;
    return;
  }
  json_ = std::move(j);
}

std::optional<std::vector<pipeline::LayerCost>> CostCache::layers(const std::string& key) const {
  if (!json_["layers"].contains(key)) return std::nullopt;
  std::vector<pipeline::LayerCost> out;
  for (const auto& r : json_["layers"][key]) {
    pipeline::LayerCost c;
    c.name = r.value("name", "");
    c.time_s = r["time_s"].get<double>();
    c.forward_s = r["forward_s"].get<double>();
    c.parameter_bytes = r["parameter_bytes"].get<int64_t>();
    c.activation_bytes = r["activation_bytes"].get<int64_t>();
    c.output_bytes = r["output_bytes"].get<int64_t>();
    c.memory_bytes = 2 * c.parameter_bytes + c.activation_bytes;
    out.push_back(c);
  }
  return out;
}

void CostCache::set_layers(const std::string& key, const std::vector<pipeline::LayerCost>& costs) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : costs) {
    rows.push_back({{"name", c.name}, {"time_s", c.time_s}, {"forward_s", c.forward_s},
                    {"parameter_bytes", c.parameter_bytes}, {"activation_bytes", c.activation_bytes},
                    {"output_bytes", c.output_bytes}});
  }
  json_["layers"][key] = rows;
  changed_ = true;
}

std::optional<std::vector<std::pair<Collective, LineFit>>> CostCache::comm(const std::string& key) const {
  if (!json_["comm"].contains(key)) return std::nullopt;
  std::vector<std::pair<Collective, LineFit>> out;
  for (const auto& [op, fit] : json_["comm"][key].items()) {
    try {
      out.emplace_back(collective_named(op), LineFit{fit[0].get<double>(), fit[1].get<double>()});
    } catch (const std::out_of_range&) {
      return std::nullopt;  // an operation this version does not know: measure again
    }
  }
  return out;
}

void CostCache::set_comm(const std::string& key, const std::vector<std::pair<Collective, LineFit>>& fits) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [op, fit] : fits) j[to_string(op)] = {fit.latency_s, fit.seconds_per_byte};
  json_["comm"][key] = j;
  changed_ = true;
}

std::optional<std::vector<double>> CostCache::numbers(const std::string& key) const {
  if (!json_["numbers"].contains(key)) return std::nullopt;
  return json_["numbers"][key].get<std::vector<double>>();
}

void CostCache::set_numbers(const std::string& key, const std::vector<double>& values) {
  json_["numbers"][key] = values;
  changed_ = true;
}

void CostCache::save() {
  if (path_.empty() || !changed_) return;
  try {
    std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
    util::AtomicFile file(path_);
    file.write(json_.dump(1));
    file.commit();
    changed_ = false;
  } catch (const std::exception& e) {
    warn_ << "paisoar plan: warning: the cost cache " << path_ << " was not written (" << error_text(e)
          << "); the next plan measures again\n";
  }
}

}  // namespace paisoar::plan
