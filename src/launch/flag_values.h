// The compound values of torchrun's flags that `paisoar launch` takes:
// --nnodes N or MIN:MAX, --rdzv-endpoint HOST[:PORT], --local-ranks-filter
// 0,1,2 and --rdzv-conf KEY=VALUE,... Pure functions; each throws
// std::invalid_argument with what is wrong in the value (the caller names
// the flag).
#pragma once

#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace paisoar::launch {

struct NodeRange {
  int min_nodes = 1;
  int max_nodes = 1;
};

// "2" (2:2) or "1:4". Both must be numbers >= 1 with min <= max.
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

}  // namespace paisoar::launch
