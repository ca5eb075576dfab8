// Display names of the step phases (trace span names, report rows).
#include "paisoar/profiler/phase.h"

namespace paisoar::profiler {

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::DataWait: return "data_wait";
    case Phase::Forward: return "forward";
    case Phase::Backward: return "backward";
    case Phase::Communication: return "communication";
    case Phase::Optimizer: return "optimizer";
    case Phase::Other: return "other";
  }
  return "unknown";
}

}  // namespace paisoar::profiler
