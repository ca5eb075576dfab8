// Cross-rank step times: every rank contributes its mean step time so the
// advisor (on rank 0, or anywhere) can tell a straggler from a slow job.
#pragma once

#include <vector>

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::profiler {

// Collective: every rank of `comm` calls it, in the same order as its other
// collectives. Returns each rank's `mean_step_s`, indexed by rank, on every
// rank (an allgather of one fp64 number per rank).
std::vector<double> gather_step_times(comm::Communicator& comm, double mean_step_s);

}  // namespace paisoar::profiler
