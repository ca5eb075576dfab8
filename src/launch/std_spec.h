// torchrun's value for --redirects and --tee: which of a rank's standard
// streams (0 none, 1 stdout, 2 stderr, 3 both) a setting applies to, either
// one value for every local rank ("3") or a map by local rank ("0:3,1:0",
// local ranks not named get 0). Pure functions.
#pragma once

#include <map>
#include <stdexcept>
#include <string>

namespace paisoar::launch {

// Bit flags, as torchrun's Std.
enum StdStream : int { kStdNone = 0, kStdOut = 1, kStdErr = 2, kStdAll = 3 };

struct StdSpec {
  // Applies to every local rank when `by_local_rank` is empty.
  int all = kStdNone;
  std::map<int, int> by_local_rank;

  // The streams of `local_rank` this setting applies to (kStdOut | kStdErr ...).
  int streams_of(int local_rank) const;
  // Whether it applies to any stream of any rank.
  bool any() const;
};

// Parses "N" or "L:N,L:N,..." with N in 0..3 and L >= 0. Throws
// std::invalid_argument saying what is wrong, e.g. "'0:5': 5 is not 0-3".
StdSpec parse_std_spec(const std::string& text);

}  // namespace paisoar::launch
