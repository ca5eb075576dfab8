// The values of torchrun's flags that `paisoar launch` takes: whole numbers
// and seconds within a range, --nnodes N or MIN:MAX, --rdzv-endpoint
// HOST[:PORT], --local-ranks-filter 0,1,2 and --rdzv-conf KEY=VALUE,... Pure
// functions; each throws std::invalid_argument with what is wrong in the
// value (the caller names the flag).
#pragma once

#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace paisoar::launch {

// The longest duration a flag takes (a week), in seconds: every deadline the
// launcher computes from one stays far inside its clocks' and poll()'s range.
inline constexpr double kMaxSeconds = 7 * 24 * 3600;

// The most nodes (--nnodes) and ranks per node (--nproc-per-node): the world
// size and every rank number stay far inside an int. The most restarts
// (--max-restarts) and OpenMP threads per rank (--omp-num-threads): far
// beyond any real job.
inline constexpr int kMaxNodes = 65536;
inline constexpr int kMaxRanksPerNode = 4096;
inline constexpr int kMaxRestarts = 1000000;
inline constexpr int kMaxOmpThreads = 65536;

// 5 as "5", 0.5 as "0.5", 604800 as "604800 (7 days)".
std::string seconds_text(double seconds);

struct NodeRange {
  int min_nodes = 1;
  int max_nodes = 1;
};

// "2" (2:2) or "1:4". Both must be numbers from 1 to kMaxNodes with min <= max.
NodeRange parse_nnodes(const std::string& text);

struct Endpoint {
  std::string host;  // without the brackets of "[::1]:29400"
  int port = 0;
};

// "host:port", "[v6 address]:port", or a host alone (port `default_port`).
// An IPv6 address needs brackets to carry a port. The port must be 0..65535.
Endpoint parse_endpoint(const std::string& text, int default_port);

// "0,1,2": distinct numbers >= 0.
std::set<int> parse_rank_list(const std::string& text);

// "key=value,key=value": keys not empty and not repeated.
std::map<std::string, std::string> parse_key_values(const std::string& text);

// A whole decimal number that fits an int (a sign allowed), else std::invalid_argument.
int parse_int(const std::string& text);

// A whole decimal number from `min` to `max`, else std::invalid_argument
// "must be a whole number from MIN to MAX, got 'TEXT'".
int parse_int_in(const std::string& text, int min, int max);

// The range of a duration flag: from `min` (excluded when `min_excluded`) to
// `max` seconds. `zero_means`, when set, says what 0 does ("off").
struct SecondsRange {
  double min = 0;
  double max = kMaxSeconds;
  bool min_excluded = false;
  const char* zero_means = nullptr;
};

// A finite decimal number of seconds in `range` (fractions and exponents
// allowed: 0.5, 1e3; not inf, nan, hex or spaces), else std::invalid_argument
// "must be a finite number of seconds from 0 to 604800 (7 days), got 'inf'".
double parse_seconds(const std::string& text, const SecondsRange& range);

}  // namespace paisoar::launch
