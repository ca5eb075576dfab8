// bench_commands() for a paisoar-core built without its benchmarks
// (PAISOAR_BUILD_BENCH=OFF, as scripts/run_main_job.sh builds it).
#include "apps/paisoar-core/commands.h"

namespace paisoar::app {

std::vector<BenchCommand> bench_commands() { return {}; }

}  // namespace paisoar::app
