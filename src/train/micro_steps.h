// MicroSteps: the forward and backward passes of one optimizer step's
// micro-batches, the part of a step that differs between data parallelism
// (DataParallelSteps: gradient accumulation over the loader's micro-batches)
// and a pipeline (PipelineSteps: the stage's share of a pipelined step).
#pragma once

#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "paisoar/amp/finite_loss_check.h"
#include "paisoar/amp/grad_scaler.h"
#include "paisoar/data/data_loader.h"
#include "paisoar/hybrid/tied_parameters.h"
#include "paisoar/layout/placements.h"
#include "paisoar/models/layer_sequence.h"
#include "paisoar/memory/activation_checkpoint_regions.h"
#include "paisoar/profiler/step_profiler.h"
#include "src/comm/flight_recorder.h"
#include "paisoar/train/trainer.h"
#include "src/train/grad_sync.h"
#include "src/config/precision_context.h"
#include "src/run_summary/run_report.h"

namespace paisoar::train {


// task.loss, or cross entropy when it is unset.
LossFn loss_of(const TrainTask& task);

// What one step's micro-batches leave besides the gradients.
struct StepOutcome {
  double loss = 0;    // this rank's mean loss of the step
  double wait_s = 0;  // waited for the loader, summed over the micro-batches
  bool skip = false;  // a non-finite loss, agreed by every rank: no update this step
};

// A phase of the step, timed for the profiler and marked in the flight
// record (what a hang diagnosis says the rank was doing).
struct TimedPhase {
  profiler::StepProfiler::PhaseScope timed;
  comm::ActivityScope activity;
};

// The run's parts a step uses; they belong to the TrainRun and outlive every call.
struct StepTools {
  data::DataLoader& loader;
  profiler::StepProfiler& prof;
  GradSync& sync;
  amp::FiniteLossCheck& finite_loss;
  amp::GradScaler& scaler;
  const Precision& precision;
  memory::CheckpointRegions* recompute;  // null: activation checkpointing is off
  // What every forward runs its layer regions through: ZeRO-3's gathering
  // and activation checkpointing, as the run has them (null: neither).
  amp::RegionRunner* regions;
  const layout::Placements& placements;  // what this rank holds
  torch::Device device;                  // the model's
  comm::FlightRecorder* flight = nullptr;  // null: no flight record
  int rank = 0;                            // in the world, for messages

  [[nodiscard]] TimedPhase phase(profiler::Phase phase);
};

class MicroSteps {
 public:
  virtual ~MicroSteps() = default;

  // Collective. Reads the step's micro-batches and leaves their gradients in
  // model() (synchronised by tools.sync in the last backward; dropped with
  // the rest of the step when a loss is not finite). The caller zeroes the
  // gradients before and steps the optimizer after.
  virtual StepOutcome run(int64_t step, StepTools& tools) = 0;

  // The module this rank trains (a pipeline: its stage) and its layers (none
  // when the task gives none).
  virtual std::shared_ptr<torch::nn::Module> model() const = 0;
  virtual models::LayerSequence layers() const = 0;
  // Collective over the world, once, after the synchroniser exists: how the
  // parameters that several of the model's parts hold (a tied embedding on
  // the first and last stage) combine their gradients; null: there are none.
  virtual std::unique_ptr<hybrid::TiedParameters> tie() { return nullptr; }
  // The pipeline stages' first layers and the end, which a checkpoint records
  // (empty without a pipeline), and the line that says how the model is cut
  // at the start of the run ("" for none).
  virtual std::vector<int> cut() const { return {}; }
  virtual std::string describe_cut() const { return ""; }
  // The lead's line on how the cut was chosen ("" for none, and on other ranks).
  virtual std::string cut_plan() const { return ""; }
  // Once, after tools.sync.start(): a pipeline arms the synchroniser before
  // its last backward of each step.
  virtual void attach(GradSync& sync) { (void)sync; }
  // After the loss scaler skipped `skipped` steps in a row: why, traced on
  // this rank's last micro-batch (non_finite_source.h); "" when it cannot
  // say (nothing kept, or a pipeline). Not collective.
  virtual std::string explain_skipped_steps(int64_t step, StepTools& tools, int64_t skipped, double scale) {
    (void)step, (void)tools, (void)skipped, (void)scale;
    return "";
  }
  // The evaluation's forward (logits, or undefined where this rank holds none).
  virtual ForwardFn eval_forward() const = 0;
  virtual bool holds_logits() const { return true; }
  // Collective over `world`, once at the run's end: a pipeline gathers its
  // stages' times, the lead prints them; returns the measured bubble (-1: no pipeline).
  virtual double report_stages(RunReport& report, comm::Communicator& world) {
    (void)report;
    (void)world;
    return -1;
  }

 protected:
  // The next micro-batch of step `step`, its wait timed as DataWait (test
  // fault point "train.next_batch:<step>"). Throws c10::Error when the
  // loader has none (the step loop counts whole steps only).
  static data::Batch next_batch(StepTools& tools, int64_t step);
};

}  // namespace paisoar::train
