// Per-bucket communication on the timeline: turns the spans DDP's gradient
// reducer records each step (ddp::ReducerStats::bucket_spans) into trace spans.
#pragma once

#include <cstddef>
#include <vector>

#include "paisoar/ddp/bucket_span.h"
#include "paisoar/profiler/step_profiler.h"

namespace paisoar::profiler {

// One span per bucket, named "bucket <index>", category "communication", on the
// communication row, with args "bucket" and "bytes". The profiler must use its
// default (steady) clock, the reducer's. Returns how many were kept (0 outside
// the trace window). Any thread.
size_t add_bucket_spans(StepProfiler& profiler, const std::vector<ddp::BucketSpan>& buckets);

}  // namespace paisoar::profiler
