// Reading the step file's metadata: see checkpoint_metadata.h.
#include "src/state/checkpoint_metadata.h"

#include <c10/util/Exception.h>

#include <cmath>
#include <regex>
#include <stdexcept>

namespace paisoar::train::detail {

const std::string& metadata_text(const format::TensorFile& c, const std::string& key) {
  const auto it = c.metadata.find(key);
  if (it == c.metadata.end()) {
    C10_THROW_ERROR(Error, c.source + " has no '" + key +
                             "': it was not written by this version of paisoar's Trainer; point checkpoint.dir "
                             "elsewhere");
  }
  return it->second;
}

[[noreturn]] void damaged_metadata(const format::TensorFile& c, const std::string& key, const std::string& why) {
  C10_THROW_ERROR(Error, c.source + ": metadata '" + key + "' is '" + c.metadata.at(key) + "', " + why +
                           "; the checkpoint is damaged, remove it to resume from the one before");
}

int64_t metadata_int(const format::TensorFile& c, const std::string& key, int64_t minimum) {
  const std::string& text = metadata_text(c, key);
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::logic_error&) {  // invalid_argument, out_of_range
    used = 0;
  }
  if (used == 0 || used != text.size()) damaged_metadata(c, key, "not an integer");
  if (value < minimum) damaged_metadata(c, key, "below " + std::to_string(minimum));
  return value;
}

double metadata_double(const format::TensorFile& c, const std::string& key) {
  const std::string& text = metadata_text(c, key);
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::logic_error&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(value)) damaged_metadata(c, key, "not a finite number");
  return value;
}

std::string named_step_dir(const format::TensorFile& c, const char* key, const std::string& kind) {
  const auto it = c.metadata.find(key);
  if (it == c.metadata.end()) return "";
  if (!std::regex_match(it->second, std::regex(kind + R"(-\d{12})"))) {
    damaged_metadata(c, key, "not a " + kind + " directory name");
  }
  return it->second;
}

}  // namespace paisoar::train::detail
