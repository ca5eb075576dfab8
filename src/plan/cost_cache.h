// The planner's measurements kept between runs in one JSON file, by what
// they depend on (the model and its settings, the micro-batch's shape and
// dtype, the precision, the device, the threads per rank, the transport and
// the group size). A file that is not one this version wrote, or holds a
// value no measurement gives (negative, not a number), is ignored with a
// warning and everything is measured again: never trusted.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "paisoar/pipeline/layer_cost.h"
#include "paisoar/plan/comm_costs.h"

namespace paisoar::plan {

class CostCache {
 public:
  // Reads `path` ("": keep nothing between runs); warnings go to `warn`.
  CostCache(std::string path, std::ostream& warn);

  std::optional<std::vector<pipeline::LayerCost>> layers(const std::string& key) const;
  void set_layers(const std::string& key, const std::vector<pipeline::LayerCost>& costs);
  // The fits of every collective over one group, or nullopt.
  std::optional<std::vector<std::pair<Collective, LineFit>>> comm(const std::string& key) const;
  void set_comm(const std::string& key, const std::vector<std::pair<Collective, LineFit>>& fits);
  std::optional<std::vector<double>> numbers(const std::string& key) const;
  void set_numbers(const std::string& key, const std::vector<double>& values);

  // Writes the file atomically if anything changed; a failure is a warning.
  void save();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ostream& warn_;
  nlohmann::json json_;
  bool changed_ = false;
};



}  // namespace paisoar::plan
