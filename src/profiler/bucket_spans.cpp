// DDP bucket spans -> profiler spans (see bucket_spans.h).
#include "paisoar/profiler/bucket_spans.h"

#include <string>

namespace paisoar::profiler {

size_t add_bucket_spans(StepProfiler& profiler, const std::vector<ddp::BucketSpan>& buckets) {
  size_t kept = 0;
  for (const auto& b : buckets) {
    kept += profiler.add_span("bucket " + std::to_string(b.bucket), "communication", b.launch_s,
                              b.finish_s,
                              {{"bucket", static_cast<double>(b.bucket)},
                               {"bytes", static_cast<double>(b.bytes)}},
                              kCommunicationRow)
                ? 1
                : 0;
  }
  return kept;
}

}  // namespace paisoar::profiler
