// Test support for the store tests: one c10d TCPStore request built in a line.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "launch/rendezvous/store_protocol.h"

namespace paisoar::launch::store::testing {

inline Request request(QueryType type, std::vector<std::string> keys, std::string value = "",
                       std::string desired = "", std::int64_t delta = 0, std::uint32_t word = 0) {
  Request r;
  r.type = type;
  r.keys = std::move(keys);
  r.value = std::move(value);
  r.desired = std::move(desired);
  r.delta = delta;
  r.word = word;
  return r;
}

}  // namespace paisoar::launch::store::testing
