// OpProfile: LibTorch's per-op profile of a stretch of training, through the
// legacy autograd profiler (which every LibTorch build has; Debian's 1.13 had
// no Kineto), written as a Chrome trace. Internal to StepProfiler.
#pragma once

#include <memory>
#include <sstream>
#include <string>

namespace torch::autograd::profiler {
struct RecordProfile;
}

namespace paisoar::profiler::detail {

// Thread safety: the profiler is thread-local (ops run by other threads are
// not recorded, except LibTorch's own task propagation): construct, finish
// and destroy on the training thread.
class OpProfile {
 public:
  // Starts recording. Throws c10::Error if this thread already runs a profiler.
  OpProfile();
  // Not finished: stops recording and drops what was recorded.
  ~OpProfile();
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;

  // Stops recording and writes the ops as a Chrome trace (a JSON array of
  // events) to `path`, atomically. REQUIRES: not finished yet.
  void finish(const std::string& path);

 private:
  std::ostringstream out_;  // declared first: record_ writes into it as it goes
  std::unique_ptr<torch::autograd::profiler::RecordProfile> record_;
};

}  // namespace paisoar::profiler::detail
