// The planner's cost model: one layout's step time and peak memory per rank,
// predicted from the model's layers as measured on this machine (forward and
// backward time, parameter, activation and output bytes at each micro-batch
// size), the collectives' fitted costs and the optimizer's measured speed.
// Communication overlaps compute as the engine schedules it: DDP's buckets
// and ZeRO's per-layer reduce-scatters during the last micro-batch's
// backward, ZeRO-3's gathers one layer ahead, ZeRO 1-2's parameter gather
// after the step; a pipeline's bubble comes from running its schedule on
// paper with each stage's own times (pipeline/schedule_sim.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "paisoar/pipeline/layer_cost.h"
#include "paisoar/pipeline/schedule.h"
#include "paisoar/plan/comm_costs.h"
#include "paisoar/plan/layout_choice.h"

namespace paisoar::plan {

struct CostInputs {
  // The model's layers measured at each micro-batch size (rows) a layout uses.
  std::map<int64_t, std::vector<pipeline::LayerCost>> layers_at_rows;
  // Per tensor width: how many ways each layer's work is split (its
  // parameters over the tensor-parallel variant's shard of them: 1 for a
  // layer every tensor rank replicates, as fashion_cnn's convolutions).
  std::map<int, std::vector<double>> tensor_split;
  // Per tensor width and rows: each layer of the tensor-parallel variant as a
  // node's ranks run it together (its collectives included); the times of a
  // tensor-parallel layout's layers come from here.
  std::map<int, std::map<int64_t, std::vector<pipeline::LayerCost>>> tensor_layers;
  CommCosts comm;
  int64_t global_batch = 0;
  pipeline::Schedule schedule = pipeline::Schedule::OneFOneB;
  double optimizer_s_per_byte = 0;   // one optimizer step's time per trainable parameter byte
  int64_t optimizer_step_bytes = 0;  // what one step allocates above its state (largest parameter)
  double state_per_parameter = 0;    // optimizer state, in parameter-sized tensors
  int64_t buffer_bytes = 0;          // the model's buffers (BatchNorm statistics), held by every rank
  int64_t input_bytes_per_row = 0;   // one sample as the loader hands it over
  int64_t loader_batches = 1;        // batches the loader holds at once (its prefetch)
  // The most profiling the layers at a micro-batch size allocates above the
  // model, by rows (what a pipeline's ranks do before training), and the
  // model's own parameter and buffer bytes.
  std::map<int64_t, int64_t> profile_peak_at_rows;
  // What one micro-batch's step costs beyond its layers' forward and backward
  // (the loss, the guards around regions, the batch's conversion), by rows;
  // a pipeline's stages share it by their share of the layers' time.
  std::map<int64_t, double> step_overhead_at_rows;
  int64_t model_bytes = 0;
  double bucket_cap_bytes = 25 << 20, first_bucket_bytes = 1 << 20;
  // How much slower the optimizer (measured alone) runs with every rank of a
  // node computing at once: as much as the layers did, whose times are
  // measured under that load.
  double contention = 1;
  double pipeline_op_s = 0;  // the executor's fixed cost per micro-batch op
};

struct StepPrediction {
  double compute_ms = 0;         // forward, backward, recomputation (the busiest rank's)
  double exposed_comm_ms = 0;    // communication compute does not hide
  double bubble_ms = 0;          // a pipeline's idle time
  double optimizer_ms = 0;
  double step_ms() const { return compute_ms + exposed_comm_ms + bubble_ms + optimizer_ms; }
  // The busiest rank's peak memory and what it holds at its peak.
  int64_t parameter_bytes = 0, gradient_bytes = 0, optimizer_state_bytes = 0, activation_bytes = 0,
          transient_bytes = 0;
  // A pipeline's ranks first profile every layer to cut the model (the whole
  // model held, one layer's forward and backward at a time): their peak is
  // at least that.
  int64_t startup_bytes = 0;
  int64_t peak_bytes() const {
    return std::max(parameter_bytes + gradient_bytes + optimizer_state_bytes + activation_bytes + transient_bytes,
                    startup_bytes);
  }
  std::vector<int> stage_bounds;  // the pipeline's cut (layer indices), empty without one
};

// Throws c10::Error when `inputs` lacks the layers at the layout's rows or a
// group size's communication costs.
StepPrediction predict_step(const LayoutChoice& layout, const CostInputs& inputs);

}  // namespace paisoar::plan
