// Test-only fault injection: a named point in the code where a test can make
// the process die as abruptly as a crash, an OOM kill or a power cut would, to
// check that what was on disk stays usable. Inert unless the environment asks:
//   PAISOAR_TEST_FAULT=<point>[:<index>]  the point to kill at (SIGKILL), and
//                                         the index it must be reached with
//   PAISOAR_TEST_FAULT_RANK=<r>           only on the process whose RANK is r
// It never fires after a restart (PAISOAR_RESTART_COUNT other than 0), so a
// relaunched job runs through. Points: see docs/CHECKPOINT.md and docs/TRAIN.md.
#pragma once

#include <cstdint>

namespace paisoar::util {

// Kills this process with SIGKILL if the environment names `point` (and
// `index`, when it gives one). Costs two getenv calls otherwise.
void fault_point(const char* point, int64_t index);

}  // namespace paisoar::util
