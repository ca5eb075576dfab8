// Test support: a whole file's bytes in a string, and a string written as a
// whole file (truncating it). No error handling: a missing file reads as "".
#pragma once

#include <fstream>
#include <iterator>
#include <string>

namespace paisoar::testing {

inline std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_file_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace paisoar::testing
