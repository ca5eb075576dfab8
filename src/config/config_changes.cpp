// config_changes: two dumped configs compared key by key, and which changed
// settings a resume can take.
#include <algorithm>
#include <set>
#include <sstream>

#include "paisoar/train/train_config.h"

namespace paisoar::train {

std::map<std::string, std::string> flat_config(const std::string& text) {
  std::map<std::string, std::string> out;
  std::vector<std::string> sections;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const size_t indent = line.find_first_not_of(' ');
    const size_t colon = line.find(':');
    if (indent == std::string::npos || colon == std::string::npos || line[indent] == '#') continue;
    sections.resize(std::min(sections.size(), indent / 2));
    const std::string key = line.substr(indent, colon - indent);
    std::string value = line.substr(colon + 1);
    const size_t comment = value.find("  # ");
    if (comment != std::string::npos) value.resize(comment);
    value.erase(0, value.find_first_not_of(' '));
    if (value.empty()) {
      sections.push_back(key);
      continue;
    }
    std::string path;
    for (const auto& s : sections) path += s + ".";
    out[path + key] = value;
  }
  return out;
}

std::vector<ConfigChange> config_changes(const std::string& was, const std::string& now) {
  const auto before = flat_config(was), after = flat_config(now);
  std::set<std::string> keys;
  for (const auto& [k, v] : before) keys.insert(k);
  for (const auto& [k, v] : after) keys.insert(k);
  std::vector<ConfigChange> out;
  for (const auto& key : keys) {
    const auto b = before.find(key), a = after.find(key);
    const std::string x = b == before.end() ? "(not set)" : b->second, y = a == after.end() ? "(not set)" : a->second;
    if (x != y) out.push_back({key, x, y});
  }
  return out;
}

bool resume_takes_change(const std::string& key) {
  for (const char* fixed : {"train.batch_size", "seed", "data.path", "data.format", "data.train_limit"}) {
    if (key == fixed) return false;
  }
  return key.rfind("model.", 0) != 0;
}

}  // namespace paisoar::train
