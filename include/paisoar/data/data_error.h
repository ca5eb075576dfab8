// The error a data set raises for one bad sample or file (corrupt JPEG,
// truncated shard, checksum mismatch, missing file, label out of range). The
// loader either rethrows it or, with OnError::Skip, drops the sample and counts it.
#pragma once

#include <stdexcept>
#include <string>

namespace paisoar::data {

// what() names the file and the record and says what to do.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace paisoar::data
