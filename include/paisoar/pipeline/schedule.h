// Pipeline schedules as explicit per-stage op lists: GPipe (every micro-batch
// forward, then every backward) and 1F1B (warm-up, one forward one backward,
// cool-down), so the order each stage runs is data that tests can check.
#pragma once

#include <string>
#include <vector>

namespace paisoar::pipeline {

enum class Schedule {
  GPipe,     // F0..F(M-1), then B0..B(M-1): M micro-batches' activations held at once
  OneFOneB,  // stage s: min(P-1-s, M) forwards, then F/B alternating, then the last Bs:
             // at most P-s micro-batches' activations held on stage s
};

// "gpipe" or "1f1b" (case-insensitive); throws c10::ValueError naming the text.
Schedule parse_schedule(const std::string& text);
const char* to_string(Schedule schedule);

struct PipelineOp {
  enum class Type { Forward, Backward };
  Type type = Type::Forward;
  int micro_batch = 0;

  bool operator==(const PipelineOp& other) const {
    return type == other.type && micro_batch == other.micro_batch;
  }
};

// The ops stage `stage` (0-based) of `stages` runs for `micro_batches`
// micro-batches, in order. Every micro-batch appears once as a forward and once
// as a backward, the forward first. Throws c10::Error on non-positive counts or
// a stage out of range.
std::vector<PipelineOp> make_schedule(Schedule schedule, int stages, int stage, int micro_batches);

// The most micro-batches whose forward ran and whose backward has not, at any
// point of `ops`: the activations a stage holds at its peak.
int peak_in_flight(const std::vector<PipelineOp>& ops);

// "F0 F1 B0 F2 B1 B2": one letter and micro-batch per op.
std::string to_string(const std::vector<PipelineOp>& ops);

}  // namespace paisoar::pipeline
