// The kernel's CPU list text ("0-3,8,10-11": sysfs cpulist files,
// /proc/self/status, taskset -c) to CPU ids and back. Header-only: the
// launcher (no LibTorch) and the library both read it.
#pragma once

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace paisoar::util {

// Throws std::invalid_argument on anything but such a list; "" is none.
inline std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> ids;
  std::string trimmed = text;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' ')) trimmed.pop_back();
  if (trimmed.empty()) return ids;
  std::istringstream in(trimmed);
  std::string item;
  auto number = [&text](const std::string& s) {
    if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        s.size() > 6)
      throw std::invalid_argument("not a CPU list: '" + text + "'");
    return std::stoi(s);
  };
  while (std::getline(in, item, ',')) {
    const auto dash = item.find('-');
    const int first = number(item.substr(0, dash));
    const int last = dash == std::string::npos ? first : number(item.substr(dash + 1));
    if (last < first) throw std::invalid_argument("not a CPU list: '" + text + "'");
    for (int i = first; i <= last; ++i) ids.push_back(i);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// {0,1,2,5} -> "0-2,5".
inline std::string cpu_list_text(const std::vector<int>& ids) {
  std::vector<int> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  std::string out;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(sorted[i]);
    if (j > i) out += '-' + std::to_string(sorted[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace paisoar::util
