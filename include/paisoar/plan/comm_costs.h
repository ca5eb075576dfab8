// What a collective costs on this machine: for each operation and group size
// a latency-bandwidth line (seconds = latency + bytes x seconds_per_byte),
// fitted to the times measured by running that collective on thread ranks of
// the transport the run would use (shared memory on one host, Gloo between
// hosts), as the communication benchmark does.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "paisoar/comm/types.h"

namespace paisoar::plan {

enum class Collective { Allreduce, Allgather, ReduceScatter, Send };
const char* to_string(Collective op);

struct LineFit {
  double latency_s = 0;
  double seconds_per_byte = 0;
  double at(int64_t bytes) const { return latency_s + seconds_per_byte * static_cast<double>(bytes); }
};

class CommCosts {
 public:
  // Seconds for `op` over a group of `ranks` moving `bytes` (the whole
  // tensor: an allreduce's input, an allgather's output, a reduce-scatter's
  // input, a send's message); 0 for a group of one. Throws c10::Error for a
  // group size that was not measured.
  double seconds(Collective op, int ranks, int64_t bytes) const;
  void set(Collective op, int ranks, LineFit fit) { fits_[{op, ranks}] = fit; }
  bool has(int ranks) const { return fits_.count({Collective::Allreduce, ranks}) > 0; }
  const std::map<std::pair<Collective, int>, LineFit>& fits() const { return fits_; }

 private:
  std::map<std::pair<Collective, int>, LineFit> fits_;
};

// Measures every operation over `ranks` thread ranks of `backend` at sizes
// from 4 KiB to 4 MiB (the median of a few runs each) and fits the lines.
// Sends are measured between two ranks of that group.
void measure_comm_costs(CommCosts& costs, comm::Backend backend, int ranks);

// The least-squares line through (bytes, seconds) points; latency and slope
// are kept non-negative.
LineFit fit_line(const std::vector<std::pair<double, double>>& points);

}  // namespace paisoar::plan
