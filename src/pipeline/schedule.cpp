// GPipe and 1F1B op lists, and the small helpers that describe them.
#include "paisoar/pipeline/schedule.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace paisoar::pipeline {

Schedule parse_schedule(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "gpipe") return Schedule::GPipe;
  if (lower == "1f1b") return Schedule::OneFOneB;
  C10_THROW_ERROR(ValueError, "unknown pipeline schedule '" + text + "': use gpipe or 1f1b");
}

const char* to_string(Schedule schedule) {
  return schedule == Schedule::GPipe ? "gpipe" : "1f1b";
}

std::vector<PipelineOp> make_schedule(Schedule schedule, int stages, int stage, int micro_batches) {
  TORCH_CHECK(stages > 0, "a pipeline needs at least one stage, got ", stages);
  TORCH_CHECK(stage >= 0 && stage < stages, "stage ", stage, " is not in [0, ", stages, ")");
  TORCH_CHECK(micro_batches > 0, "micro_batches must be at least 1, got ", micro_batches);
  using T = PipelineOp::Type;
  std::vector<PipelineOp> ops;
  ops.reserve(2 * micro_batches);
  const int warmup =
      schedule == Schedule::GPipe ? micro_batches : std::min(stages - 1 - stage, micro_batches);
  for (int m = 0; m < warmup; ++m) ops.push_back({T::Forward, m});
  int next_backward = 0;
  for (int m = warmup; m < micro_batches; ++m) {  // steady state: one forward, one backward
    ops.push_back({T::Forward, m});
    ops.push_back({T::Backward, next_backward++});
  }
  while (next_backward < micro_batches) ops.push_back({T::Backward, next_backward++});
  return ops;
}

int peak_in_flight(const std::vector<PipelineOp>& ops) {
  int now = 0, peak = 0;
  for (const auto& op : ops) {
    now += op.type == PipelineOp::Type::Forward ? 1 : -1;
    peak = std::max(peak, now);
  }
  return peak;
}

std::string to_string(const std::vector<PipelineOp>& ops) {
  std::string out;
  for (const auto& op : ops) {
    if (!out.empty()) out += ' ';
    out += op.type == PipelineOp::Type::Forward ? 'F' : 'B';
    out += std::to_string(op.micro_batch);
  }
  return out;
}

}  // namespace paisoar::pipeline
