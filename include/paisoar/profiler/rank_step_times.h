// Cross-rank figures: every rank contributes its numbers (its mean step time,
// or a row of them) so the advisor and the logs on rank 0 can tell a
// straggler from a slow job.
#pragma once

#include <vector>

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::profiler {

// Collective: every rank of `comm` calls it, in the same order as its other
// collectives, with rows of the same length (a different length fails as a
// size mismatch). Returns every rank's row, indexed by rank, on every rank
// (one allgather of fp64).
std::vector<std::vector<double>> gather_rank_rows(comm::Communicator& comm, const std::vector<double>& mine);

// gather_rank_rows of one number: each rank's `mean_step_s`, indexed by rank.
std::vector<double> gather_step_times(comm::Communicator& comm, double mean_step_s);

}  // namespace paisoar::profiler
