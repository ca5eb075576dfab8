// Parsers of torchrun's compound flag values.
#include "launch/flag_values.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace paisoar::launch {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

}  // namespace

std::string seconds_text(double s) {
  std::ostringstream text;
  text << s;
  if (s >= 86400 && std::fmod(s, 86400) == 0) text << " (" << s / 86400 << " days)";
  return text.str();
}

int parse_int_in(const std::string& text, int min, int max) {
  const std::string expected =
      "must be a whole number from " + std::to_string(min) + " to " + std::to_string(max) + ", got '" + text + "'";
  int v = 0;
  try {
    v = parse_int(text);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument(expected);
  }
  if (v < min || v > max) throw std::invalid_argument(expected);
  return v;
}

double parse_seconds(const std::string& text, const SecondsRange& range) {
  std::string expected = "must be a finite number of seconds ";
  expected += range.min_excluded ? "more than " + seconds_text(range.min) + " and at most "
                                 : "from " + seconds_text(range.min) +
                                       (range.zero_means != nullptr && range.min == 0
                                            ? std::string(" (") + range.zero_means + ")"
                                            : "") +
                                       " to ";
  expected += seconds_text(range.max) + ", got '" + text + "'";
  // Digits, a point, an exponent and signs only: strtod would take "inf",
  // "nan", "0x10" and leading spaces too.
  const bool plain = !text.empty() && text.find_first_not_of("0123456789.eE+-") == std::string::npos;
  errno = 0;
  char* end = nullptr;
  const double v = plain ? std::strtod(text.c_str(), &end) : 0;
  if (!plain || *end != '\0' || !std::isfinite(v) || errno == ERANGE) throw std::invalid_argument(expected);
  if (v < range.min || v > range.max || (range.min_excluded && v == range.min))
    throw std::invalid_argument(expected);
  return v;
}

int parse_int(const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) || *end != '\0' ||
      errno == ERANGE || v < INT_MIN || v > INT_MAX)
    throw std::invalid_argument("'" + text + "' is not a whole number");
  return static_cast<int>(v);
}

NodeRange parse_nnodes(const std::string& text) {
  const std::vector<std::string> parts = split(text, ':');
  if (parts.size() > 2) throw std::invalid_argument("'" + text + "' is not N or MIN:MAX");
  NodeRange r;
  r.min_nodes = parse_int_in(parts.front(), 1, kMaxNodes);
  r.max_nodes = parse_int_in(parts.back(), 1, kMaxNodes);
  if (r.max_nodes < r.min_nodes)
    throw std::invalid_argument("MIN:MAX needs MIN <= MAX, got '" + text + "'");
  return r;
}

Endpoint parse_endpoint(const std::string& text, int default_port) {
  Endpoint e;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string::npos) throw std::invalid_argument("'" + text + "' lacks its ']'");
    e.host = text.substr(1, close - 1);
    const std::string rest = text.substr(close + 1);
    if (!rest.empty() && rest[0] != ':')
      throw std::invalid_argument("'" + text + "': expected ':PORT' after ']'");
    if (!rest.empty()) port = rest.substr(1);
    if (rest.empty()) port = std::to_string(default_port);
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    e.host = text.substr(0, text.find(':'));
    port = text.substr(text.find(':') + 1);
  } else {
    e.host = text;  // a name, an IPv4 address, or an IPv6 address without a port
    port = std::to_string(default_port);
  }
  if (e.host.empty()) throw std::invalid_argument("'" + text + "' names no host");
  try {
    e.port = parse_int_in(port, 0, 65535);
  } catch (const std::invalid_argument& bad) {
    throw std::invalid_argument("'" + text + "': its port " + bad.what());
  }
  return e;
}

std::set<int> parse_rank_list(const std::string& text) {
  std::set<int> ranks;
  for (const std::string& item : split(text, ',')) {
    const int r = parse_int(item);
    if (r < 0) throw std::invalid_argument("local rank " + item + " is negative");
    if (!ranks.insert(r).second) throw std::invalid_argument("local rank " + item + " is given twice");
  }
  return ranks;
}

std::map<std::string, std::string> parse_key_values(const std::string& text) {
  std::map<std::string, std::string> out;
  if (text.empty()) return out;
  for (const std::string& item : split(text, ',')) {
    const std::size_t eq = item.find('=');
    if (eq == 0 || eq == std::string::npos)
      throw std::invalid_argument("'" + item + "' is not KEY=VALUE");
    if (!out.emplace(item.substr(0, eq), item.substr(eq + 1)).second)
      throw std::invalid_argument("'" + item.substr(0, eq) + "' is given twice");
  }
  return out;
}

}  // namespace paisoar::launch
