// predict_step: a layout's step on paper. Times are per micro-batch and per
// stage; each rank's communication runs on one lane in the order it is
// issued (as one Communicator runs it), beside its compute.
#include "paisoar/plan/step_model.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <numeric>

#include "paisoar/pipeline/partition.h"
#include "paisoar/pipeline/schedule_sim.h"

namespace paisoar::plan {
namespace {

using pipeline::LayerCost;

// One stage's layers as this layout runs them: times scaled by the ranks'
// contention and split over the tensor axis; bytes this rank holds.
struct StageLayers {
  std::vector<double> forward, backward;  // seconds per micro-batch, by layer
  std::vector<int64_t> params;            // parameter bytes this rank computes with, by layer
  std::vector<int64_t> activations, inputs, outputs;
  int64_t output_bytes = 0;               // what the stage sends on per micro-batch
};

StageLayers stage_layers(const std::vector<LayerCost>& all, int begin, int end, const LayoutChoice& l,
                         const CostInputs& in, int64_t rows) {
  StageLayers s;
  const int t = l.ranks.tensor;
  const auto split_found = in.tensor_split.find(t);
  TORCH_CHECK(t == 1 || split_found != in.tensor_split.end(), "the planner has not measured the split of tensor ", t);
  const std::vector<LayerCost>* timed = &all;  // whose times: the whole layers, or the tensor-parallel ones
  if (t > 1) {
    const auto width = in.tensor_layers.find(t);
    TORCH_CHECK(width != in.tensor_layers.end() && width->second.count(rows), "the planner has not measured tensor ",
                t, " at ", rows, " rows");
    timed = &width->second.at(rows);
  }
  int64_t input = rows * in.input_bytes_per_row;
  for (int i = begin; i < end; ++i) {
    const LayerCost& c = all[i];
    const double split = t == 1 ? 1.0 : split_found->second.at(i);
    const LayerCost& time = timed->at(i);
    double f = time.forward_s, b = time.time_s - time.forward_s;
    if (l.checkpointing) b += f;  // the forward again, in backward
    s.forward.push_back(f + in.pipeline_op_s / std::max(1, end - begin) * (l.ranks.pipeline > 1));
    s.backward.push_back(b + in.pipeline_op_s / std::max(1, end - begin) * (l.ranks.pipeline > 1));
    s.params.push_back(static_cast<int64_t>(static_cast<double>(c.parameter_bytes) / split));
    s.activations.push_back(static_cast<int64_t>(static_cast<double>(c.activation_bytes) / split));
    s.outputs.push_back(c.output_bytes);
    s.inputs.push_back(input);
    input = c.output_bytes;
  }
  s.output_bytes = input;
  return s;
}

double total_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// A queue of collectives run one after another, each starting when issued
// and when the one before it has ended.
struct CommLane {
  double free_at = 0;
  double run(double issued, double seconds) {
    free_at = std::max(free_at, issued) + seconds;
    return free_at;
  }
};

// ZeRO-3's forward: each layer's parameters gathered before it runs, the
// next one's issued as this one starts (zero.prefetch). Returns the time the
// forward ends.
double gathered_forward(const StageLayers& s, const CostInputs& in, int data) {
  CommLane lane;
  double end = 0;
  double issue = 0;
  for (size_t i = 0; i < s.forward.size(); ++i) {
    const double ready = lane.run(issue, in.comm.seconds(Collective::Allgather, data, s.params[i]));
    const double start = std::max(end, ready);
    issue = start;
    end = start + s.forward[i];
  }
  return end;
}

// The backward of one micro-batch, layers in reverse, with what it issues:
// ZeRO-3 gathers (one layer ahead), then per layer a reduce-scatter (ZeRO)
// or DDP's buckets when they fill. Returns when the last collective ends,
// at least the backward's own end.
double backward_with_sync(const StageLayers& s, const LayoutChoice& l, const CostInputs& in, bool sync) {
  const int d = l.ranks.data;
  CommLane lane;
  double end = 0;
  double bucket = 0;
  bool first_bucket = true;
  const bool gathers = l.zero_stage == 3 && d > 1;
  double gathered = 0;  // when layer k's parameters are here
  if (gathers && !s.backward.empty()) gathered = lane.run(0, in.comm.seconds(Collective::Allgather, d, s.params.back()));
  for (size_t k = s.backward.size(); k-- > 0;) {
    const double start = std::max(end, gathered);
    // The next layer's gather is issued as this one starts, before its reduce-scatter.
    if (gathers && k > 0) gathered = lane.run(start, in.comm.seconds(Collective::Allgather, d, s.params[k - 1]));
    end = start + s.backward[k];
    if (!sync || d == 1) continue;
    if (l.zero_stage > 0) {
      lane.run(end, in.comm.seconds(Collective::ReduceScatter, d, s.params[k]));
      continue;
    }
    bucket += static_cast<double>(s.params[k]);
    const double cap = first_bucket ? in.first_bucket_bytes : in.bucket_cap_bytes;
    if (bucket >= cap) {
      lane.run(end, in.comm.seconds(Collective::Allreduce, d, static_cast<int64_t>(bucket)));
      bucket = 0;
      first_bucket = false;
    }
  }
  if (bucket > 0) lane.run(end, in.comm.seconds(Collective::Allreduce, d, static_cast<int64_t>(bucket)));
  return std::max(end, lane.free_at);
}

struct StageTimes {
  double forward = 0, backward = 0;  // one micro-batch, with the exposed ZeRO-3 gathers
  double last_backward = 0;          // the last micro-batch's, with the gradients' sync
  double compute = 0;                // forward + backward (+ recomputation) of one micro-batch
};

StageTimes stage_times(const StageLayers& s, const LayoutChoice& l, const CostInputs& in) {
  StageTimes t;
  t.compute = total_of(s.forward) + total_of(s.backward);
  const bool gathers = l.zero_stage == 3 && l.ranks.data > 1;
  t.forward = gathers ? gathered_forward(s, in, l.ranks.data) : total_of(s.forward);
  // ZeRO 2-3 reduce-scatter every micro-batch's gradients; DDP and ZeRO-1 only the last's.
  t.backward = backward_with_sync(s, l, in, l.zero_stage >= 2);
  t.last_backward = backward_with_sync(s, l, in, true);
  if (l.ranks.pipeline > 1) {
    t.forward += in.comm.seconds(Collective::Send, 2, s.output_bytes);
    t.backward += in.comm.seconds(Collective::Send, 2, s.inputs.front());
    t.last_backward += in.comm.seconds(Collective::Send, 2, s.inputs.front());
  }
  return t;
}

// This stage's rank at its peak.
void stage_memory(const StageLayers& s, const LayoutChoice& l, const CostInputs& in, int64_t in_flight,
                  StepPrediction& p) {
  const int64_t d = l.ranks.data;
  const int64_t params = std::accumulate(s.params.begin(), s.params.end(), int64_t{0});
  const int64_t largest = s.params.empty() ? 0 : *std::max_element(s.params.begin(), s.params.end());
  const int64_t buffers = in.buffer_bytes / l.ranks.pipeline;
  StepPrediction m;
  m.parameter_bytes = (l.zero_stage == 3 ? params / d + 2 * largest : params) + buffers;
  m.gradient_bytes = l.zero_stage >= 2 ? params / d + largest : params;
  const double state = in.state_per_parameter * static_cast<double>(params);
  m.optimizer_state_bytes = static_cast<int64_t>(l.zero_stage >= 1 ? state / static_cast<double>(d) : state);
  // What one micro-batch keeps for backward, and the most its backward holds
  // at once: layer k's backward with the layers before it still saved, its
  // output's gradient coming in and its input's going out. Checkpointing
  // keeps each region's input and recomputes one region at a time.
  int64_t per_micro_batch = 0, backward_peak = 0, kept_before = 0;
  for (size_t k = 0; k < s.activations.size(); ++k) {
    const int64_t saved = l.checkpointing ? s.inputs[k] : s.activations[k];
    // Recomputing a region makes its output again beside the output's gradient.
    const int64_t recomputed = l.checkpointing ? s.activations[k] + s.outputs[k] : 0;
    per_micro_batch += saved;
    backward_peak = std::max(backward_peak, kept_before + saved + recomputed + s.outputs[k] + s.inputs[k]);
    kept_before += saved;
  }
  if (l.ranks.pipeline > 1) {
    // A stage also holds each in-flight micro-batch's input as it came (the
    // batch's slice, or what the stage before sent) and its output's copy
    // being sent on.
    per_micro_batch += s.inputs.front() + s.output_bytes;
    backward_peak += s.inputs.front() + s.output_bytes;
  }
  m.activation_bytes = (in_flight - 1) * per_micro_batch + std::max(per_micro_batch, backward_peak);
  // The loader's batches are a replica's whole share of the step, split into micro-batches after.
  m.transient_bytes = std::max<int64_t>(in.optimizer_step_bytes, in.loader_batches * l.micro_batches * s.inputs.front());
  if (m.peak_bytes() > p.peak_bytes()) {
    p.parameter_bytes = m.parameter_bytes;
    p.gradient_bytes = m.gradient_bytes;
    p.optimizer_state_bytes = m.optimizer_state_bytes;
    p.activation_bytes = m.activation_bytes;
    p.transient_bytes = m.transient_bytes;
  }
}

}  // namespace

StepPrediction predict_step(const LayoutChoice& l, const CostInputs& in) {
  const int64_t rows = l.rows(in.global_batch);
  const auto found = in.layers_at_rows.find(rows);
  TORCH_CHECK(found != in.layers_at_rows.end(), "the planner has not measured the layers at ", rows, " rows");
  const std::vector<LayerCost>& layers = found->second;
  const int p = l.ranks.pipeline;
  const int d = l.ranks.data;
  const auto micro = static_cast<int>(l.micro_batches);

  StepPrediction out;
  std::vector<StageLayers> stages;
  if (p == 1) {
    stages.push_back(stage_layers(layers, 0, static_cast<int>(layers.size()), l, in, rows));
  } else {
    const pipeline::PartitionPlan plan = pipeline::partition_layers(layers, p);
    for (const auto& st : plan.stages) {
      stages.push_back(stage_layers(layers, st.begin, st.end, l, in, rows));
      out.stage_bounds.push_back(st.begin);
    }
    out.stage_bounds.push_back(plan.stages.back().end);
  }

  // The step's cost beyond the layers, shared by the stages as their layers' time is.
  const auto overhead_found = in.step_overhead_at_rows.find(rows);
  const double overhead = overhead_found == in.step_overhead_at_rows.end() ? 0.0 : overhead_found->second;
  double layers_total = 0;
  for (const auto& st : stages) layers_total += total_of(st.forward) + total_of(st.backward);
  std::vector<double> forward, backward;
  double busiest = 0, sync_tail = 0, optimizer = 0, gather_after = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    const double share = layers_total > 0 ? (total_of(stages[s].forward) + total_of(stages[s].backward)) / layers_total
                                          : 1.0 / static_cast<double>(stages.size());
    if (!stages[s].forward.empty()) stages[s].forward.back() += overhead * share;  // the loss ends the forward
    const StageTimes t = stage_times(stages[s], l, in);
    forward.push_back(t.forward);
    backward.push_back(t.backward);
    busiest = std::max(busiest, micro * t.compute);
    sync_tail = std::max(sync_tail, t.last_backward - t.backward);
    const int64_t params = std::accumulate(stages[s].params.begin(), stages[s].params.end(), int64_t{0});
    const int64_t updated = l.zero_stage >= 1 ? params / d : params;
    optimizer = std::max(optimizer, in.optimizer_s_per_byte * static_cast<double>(updated) * in.contention);
    if (l.zero_stage == 1 || l.zero_stage == 2) {
      double g = 0;  // every layer's updated shard gathered back, one after another
      for (int64_t b : stages[s].params) g += in.comm.seconds(Collective::Allgather, d, b);
      gather_after = std::max(gather_after, g);
    }
    const int64_t in_flight =
        p == 1 ? 1
               : (in.schedule == pipeline::Schedule::GPipe ? micro : std::min<int64_t>(p - static_cast<int>(s), micro));
    stage_memory(stages[s], l, in, in_flight, out);
  }

  double makespan = 0;
  if (p == 1) {
    makespan = micro * (forward[0] + backward[0]);
  } else {
    std::vector<std::vector<pipeline::PipelineOp>> ops;
    for (int s = 0; s < p; ++s) ops.push_back(pipeline::make_schedule(in.schedule, p, s, micro));
    makespan = pipeline::simulate_schedule(ops, micro, forward, backward).makespan;
  }
  if (p > 1) {
    const auto profiled = in.profile_peak_at_rows.find(rows);
    if (profiled != in.profile_peak_at_rows.end()) out.startup_bytes = in.model_bytes + profiled->second;
  }
  out.compute_ms = 1e3 * busiest;
  out.bubble_ms = p == 1 ? 0 : 1e3 * std::max(0.0, makespan - busiest);
  // What the compute did not hide: ZeRO-3's gathers and every micro-batch's
  // reduce-scatters (the schedule's time above the compute), the last
  // backward's sync tail, ZeRO 1-2's parameter gather after the step.
  const double hidden_more = p == 1 ? std::max(0.0, makespan - busiest) : 0.0;
  out.exposed_comm_ms = 1e3 * (hidden_more + sync_tail + gather_after);
  out.optimizer_ms = 1e3 * optimizer;
  return out;
}

}  // namespace paisoar::plan
