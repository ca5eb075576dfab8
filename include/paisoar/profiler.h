// paisoar's profiler: per-step phase timing, Chrome-trace timelines (with
// DDP's per-bucket communication and LibTorch's per-op profile), cross-rank
// step times, and the advisor that turns them into what to change.
#pragma once

#include "paisoar/profiler/advisor.h"
#include "paisoar/profiler/bucket_spans.h"
#include "paisoar/profiler/chrome_trace.h"
#include "paisoar/profiler/phase.h"
#include "paisoar/profiler/profile_summary.h"
#include "paisoar/profiler/rank_step_times.h"
#include "paisoar/profiler/report.h"
#include "paisoar/profiler/step_profiler.h"
