// Test support for the fuzz tests: ByteMutator makes damaged copies of a valid
// file (bit flips, "interesting" bytes and 32/64-bit values, truncation,
// insertion, deletion, duplicated ranges), deterministically from a seed, and
// fuzz_file() runs a reader over thousands of them, requiring that each one
// either loads or throws the reader's own error type naming the file. A crash,
// another exception type or an allocation over the cap fails the test and
// names the seed and iteration, so a failure can be replayed.
#pragma once

#include "tests/fuzz/allocation_cap.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>

#include "tests/support/file_bytes.h"
#include "tests/support/temp_dir.h"

namespace paisoar::testing {

class ByteMutator {
 public:
  explicit ByteMutator(uint64_t seed) : rng_(seed) {}

  uint64_t below(uint64_t n) { return n == 0 ? 0 : std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }

  // One to three random edits of `in`.
  std::string mutate(std::string s) {
    const int edits = 1 + static_cast<int>(below(3));
    for (int e = 0; e < edits; ++e) edit(s);
    return s;
  }

 private:
  void edit(std::string& s) {
    static constexpr uint64_t kInteresting[] = {0,          1,          0x7f,       0x80,      0xff,
                                                0x7fff,     0xffff,     0x7fffffff, 0x80000000, 0xffffffff,
                                                1ull << 40, 1ull << 62, ~0ull >> 1, ~0ull};
    const uint64_t pos = below(s.size() + 1);
    switch (below(8)) {
      case 0:  // flip one bit
        if (!s.empty()) s[below(s.size())] ^= static_cast<char>(1u << below(8));
        break;
      case 1:  // an interesting byte
        if (!s.empty()) s[below(s.size())] = static_cast<char>(kInteresting[below(5)]);
        break;
      case 2:  // an interesting 32- or 64-bit value, little- or big-endian
        if (s.size() >= 8) {
          const uint64_t v = kInteresting[below(std::size(kInteresting))];
          const int width = below(2) ? 8 : 4;
          const bool big = below(2);
          const uint64_t at = below(s.size() - width + 1);
          for (int i = 0; i < width; ++i) {
            s[at + i] = static_cast<char>(v >> (8 * (big ? width - 1 - i : i)));
          }
        }
        break;
      case 3:  // truncate
        s.resize(below(s.size() + 1));
        break;
      case 4: {  // insert random bytes
        std::string extra(1 + below(16), '\0');
        for (char& c : extra) c = static_cast<char>(below(256));
        s.insert(pos, extra);
        break;
      }
      case 5:  // delete a range
        s.erase(pos, 1 + below(64));
        break;
      case 6:  // duplicate a range
        if (!s.empty()) {
          const uint64_t from = below(s.size());
          s.insert(pos, s.substr(from, 1 + below(64)));
        }
        break;
      default:  // a printable digit or punctuation (reaches text parsers' branches)
        if (!s.empty()) s[below(s.size())] = "0123456789-+.\t\n{}[]\",:e "[below(25)];
        break;
    }
  }

  std::mt19937_64 rng_;
};

// Writes each of `iterations` mutants of `valid` (made by `make`, default
// ByteMutator::mutate) to `path` and calls `load(path)`. Each call must return
// or throw `Error` whose message contains `named` (default: `path`). Any
// single allocation above `cap_bytes` fails the test.
template <class Error>
void fuzz_file(const std::string& path, const std::string& valid, int iterations, uint64_t seed,
               const std::function<void(const std::string&)>& load,
               const std::function<std::string(ByteMutator&, const std::string&)>& make = nullptr,
               const std::string& named = "", size_t cap_bytes = size_t{64} << 20) {
  ByteMutator mutator(seed);
  int failures = 0, loaded = 0;
  for (int i = 0; i < iterations && failures < 5; ++i) {
    const std::string mutant = make ? make(mutator, valid) : mutator.mutate(valid);
    write_file_bytes(path, mutant);
    const std::string where = "seed " + std::to_string(seed) + " iteration " + std::to_string(i) +
                              " (" + std::to_string(mutant.size()) + " bytes)";
    AllocationCap cap(cap_bytes);
    try {
      load(path);
      ++loaded;
    } catch (const Error& e) {
      const std::string message = e.what();
      if (message.find(named.empty() ? path : named) == std::string::npos) {
        ADD_FAILURE() << where << ": the error does not name the file: " << message;
        ++failures;
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << where << ": unexpected exception type: " << e.what();
      ++failures;
    }
    if (cap.refused() > 0) {
      ADD_FAILURE() << where << ": tried to allocate " << cap.largest_refused() << " bytes";
      ++failures;
    }
  }
  // Most mutants must be rejected, or the mutations do not reach the checks.
  EXPECT_LT(loaded, iterations) << "every mutant loaded";
}

}  // namespace paisoar::testing
