// The error a data set raises for one bad sample or file (corrupt JPEG,
// truncated shard, checksum mismatch, missing file, label out of range). The
// loader either rethrows it or, with OnError::Skip, drops the sample and counts it.
#pragma once

#include <c10/util/Exception.h>

#include <string>

namespace paisoar::data {

// what() names the file and the record and says what to do.
class DataError : public c10::Error {
 public:
  explicit DataError(std::string message) : c10::Error(std::move(message)) {}
};

}  // namespace paisoar::data
