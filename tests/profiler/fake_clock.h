// Test support for the profiler: a clock the test advances by hand, so phase
// and step times are exact numbers instead of measured sleeps.
#pragma once

#include <memory>

#include "paisoar/profiler/step_profiler.h"

namespace paisoar::testing {

class FakeClock {
 public:
  // The profiler's view of this clock; the FakeClock must outlive it.
  profiler::StepProfiler::Clock clock() {
    return [now = now_] { return *now; };
  }
  void advance(double seconds) { *now_ += seconds; }
  double now() const { return *now_; }

 private:
  std::shared_ptr<double> now_ = std::make_shared<double>(1000.0);
};

}  // namespace paisoar::testing
