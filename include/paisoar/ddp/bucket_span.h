// BucketSpan: when one gradient bucket's communication ran during the last
// synchronised backward, as the reducer saw it. The profiler turns these into
// timeline spans (profiler/bucket_spans.h). Plain data, no LibTorch.
#pragma once

#include <cstddef>
#include <cstdint>

namespace paisoar::ddp {

struct BucketSpan {
  size_t bucket = 0;    // index in launch order (GradientReducer::bucket_assignment)
  int64_t bytes = 0;    // the bucket's gradient bytes, before any compression
  // std::chrono::steady_clock time in seconds since its epoch:
  double launch_s = 0;  // handed to the communication hook (during or after backward)
  double finish_s = 0;  // the hook's finish() returned: the average is in place
};

}  // namespace paisoar::ddp
