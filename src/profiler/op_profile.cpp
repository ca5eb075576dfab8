// OpProfile over torch::autograd::profiler::RecordProfile, which enables the
// legacy profiler for its lifetime and writes the events when destroyed.
#include "src/profiler/op_profile.h"

#include <torch/csrc/autograd/profiler_legacy.h>

#include <cassert>

#include "src/util/atomic_file.h"

namespace paisoar::profiler::detail {

OpProfile::OpProfile()
    : record_(std::make_unique<torch::autograd::profiler::RecordProfile>(out_)) {}

OpProfile::~OpProfile() = default;

void OpProfile::finish(const std::string& path) {
  assert(record_);
  record_.reset();  // stops the profiler and writes the events into out_
  util::AtomicFile file(path);
  file.write(out_.str());
  file.commit();
}

}  // namespace paisoar::profiler::detail
