// parse_std_spec() and StdSpec's lookups.
#include "launch/std_spec.h"

#include <cctype>

namespace paisoar::launch {
namespace {

// A non-negative decimal number, the whole of `text`; -1 if it is not one.
int whole_number(const std::string& text) {
  if (text.empty() || text.size() > 6) return -1;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
  return std::stoi(text);
}

int stream_value(const std::string& text, const std::string& item) {
  const int v = whole_number(text);
  if (v < 0 || v > kStdAll)
    throw std::invalid_argument("'" + item + "': " + (text.empty() ? "nothing" : "'" + text + "'") +
                                " is not 0 (none), 1 (stdout), 2 (stderr) or 3 (both)");
  return v;
}

}  // namespace

int StdSpec::streams_of(int local_rank) const {
  if (by_local_rank.empty()) return all;
  auto it = by_local_rank.find(local_rank);
  return it == by_local_rank.end() ? kStdNone : it->second;
}

bool StdSpec::any() const {
  if (all != kStdNone) return true;
  for (const auto& [rank, streams] : by_local_rank)
    if (streams != kStdNone) return true;
  return false;
}

StdSpec parse_std_spec(const std::string& text) {
  StdSpec spec;
  if (text.find(':') == std::string::npos) {
    spec.all = stream_value(text, text);
    return spec;
  }
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::size_t colon = item.find(':');
    if (colon == std::string::npos)
      throw std::invalid_argument("'" + item + "' is not LOCAL_RANK:VALUE (e.g. 0:3,1:0)");
    const int rank = whole_number(item.substr(0, colon));
    if (rank < 0) throw std::invalid_argument("'" + item + "': the local rank is not a number");
    if (spec.by_local_rank.count(rank) > 0)
      throw std::invalid_argument("local rank " + std::to_string(rank) + " is given twice");
    spec.by_local_rank[rank] = stream_value(item.substr(colon + 1), item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return spec;
}

}  // namespace paisoar::launch
