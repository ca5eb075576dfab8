// The three measurements of `paisoar bench pipeline`, each run on P rank
// threads over an in-process store (one process: the executor only sees a
// Communicator, and 2-16 threads start in milliseconds where rank processes
// take a LibTorch start each). LibTorch runs one intra-op thread per rank.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "paisoar/comm/types.h"
#include "paisoar/pipeline/schedule.h"

namespace paisoar::bench {

// Bubble: each stage is one layer that sleeps forward_ms in forward and twice
// that in backward ("ideal devices": the rank threads do not compete for the
// cores), so what is measured is the schedule plus the executor's overhead.
struct BubbleRow {
  int stages = 0, micro_batches = 0;
  pipeline::Schedule schedule = pipeline::Schedule::GPipe;
  double formula = 0;       // (P-1)/(M+P-1)
  double measured = 0;      // median over steps of measured_bubble
  double step_ms = 0;       // median slowest stage's step
  double ideal_step_ms = 0; // (M+P-1) x (forward + backward)
};
// The rank threads' stage links run over `backend` (paisoar's shared memory,
// Gloo over loopback, or the in-process threads backend).
std::vector<BubbleRow> run_bubble(const std::vector<int>& stages, const std::vector<int>& micro_batches,
                                  double forward_ms, int steps, comm::Backend backend);

// Overhead: the executor's own cost per micro-batch, with stages whose one
// layer does no work (a multiply by a one-element weight and a copy of a
// 4-float row): the slowest stage's step time over M, and the part of it spent
// outside forward and backward (links, schedule, agreement).
struct OverheadRow {
  int stages = 0, micro_batches = 0;
  pipeline::Schedule schedule = pipeline::Schedule::GPipe;
  double per_micro_batch_ms = 0;  // median over steps of step / M
  double outside_ops_ms = 0;      // median over steps of (step - compute) / M, on the slowest stage
};
std::vector<OverheadRow> run_overhead(const std::vector<int>& stages, int micro_batches, int steps,
                                      comm::Backend backend);

// Memory: [Linear(W,W), Tanh] x 4 split evenly over 2 stages, M micro-batches
// of `rows` rows, one step of each schedule after a warm-up step.
struct MemoryRow {
  pipeline::Schedule schedule = pipeline::Schedule::GPipe;
  std::vector<int> peak_in_flight;            // per stage, from the executor
  std::vector<int64_t> activation_bytes;      // per stage: peak_in_flight x one micro-batch's activations
  int64_t process_peak_bytes = 0;             // the tracking allocator's peak above the step's start, all stages
};
struct MemoryResult {
  int stages = 2, micro_batches = 8;
  int64_t width = 0, rows = 0;
  std::vector<int64_t> micro_batch_bytes;  // per stage: what one forward keeps alive until its backward
  MemoryRow gpipe, one_f_one_b;
};
MemoryResult run_memory(int micro_batches, int64_t width, int64_t rows);

// Balance: `small_layers` Linear(W,W) then one Linear(W, wide): the naive
// equal-layer split puts the wide layer with several small ones.
struct PlanTiming {
  std::vector<int> bounds;                 // stage s = layers [bounds[s], bounds[s+1])
  std::vector<double> profiled_stage_ms;   // summed profiled layer times
  std::vector<double> measured_stage_ms;   // median per-step compute of each stage
  double step_ms = 0;                      // median slowest stage's step
  double profiled_slowest_ms() const;
  double measured_slowest_ms() const;
};
struct BalanceResult {
  int stages = 2, micro_batches = 4, small_layers = 0;
  int64_t width = 0, wide = 0, rows = 0;
  std::vector<double> layer_ms;  // profiled forward+backward per layer
  PlanTiming automatic, naive;
};
BalanceResult run_balance(int small_layers, int64_t width, int64_t wide, int64_t rows, int micro_batches,
                          int rounds, int steps_per_round);

}  // namespace paisoar::bench
