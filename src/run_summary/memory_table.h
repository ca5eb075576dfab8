// The end-of-run memory table: each rank's MemoryReport gathered to every
// rank (one allreduce) and formatted one row per rank.
#pragma once

#include <string>
#include <vector>

#include "paisoar/memory/memory_report.h"

namespace paisoar::comm {
class Communicator;
}

namespace paisoar::train {

// Collective. Every rank's report, in rank order (device names are taken as
// this rank's; the numbers are each rank's own).
std::vector<memory::MemoryReport> gather_memory_reports(comm::Communicator& comm,
                                                        const memory::MemoryReport& mine);

}  // namespace paisoar::train
