// TrainRun: the parts of one Trainer::fit, built by explicit code in the
// order that pairs their collectives across ranks (the checkpoint directory
// check, the background writer's group, the pipeline's profile, ZeRO's
// sharding, the resume, DDP's broadcast), one optimizer step over them, the
// checkpoints, and the end of the run.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "paisoar/amp/finite_loss_check.h"
#include "paisoar/amp/grad_scaler.h"
#include "paisoar/checkpoint/checkpoint_manager.h"
#include "paisoar/comm/communicator.h"
#include "paisoar/data/data_loader.h"
#include "paisoar/amp/region_chain.h"
#include "paisoar/hybrid/tied_parameters.h"
#include "paisoar/memory/activation_checkpoint_regions.h"
#include "paisoar/optim/lr_schedule.h"
#include "paisoar/hybrid/hybrid_mesh.h"
#include "paisoar/profiler/step_profiler.h"
#include "paisoar/train/trainer.h"
#include "src/state/async_save.h"
#include "src/train/eval_schedule.h"
#include "src/train/grad_sync.h"
#include "src/train/micro_steps.h"
#include "src/run_summary/run_end_report.h"
#include "src/train/run_plan.h"
#include "src/run_summary/log_window.h"
#include "src/run_summary/run_report.h"
#include "src/state/trainer_checkpoint.h"

namespace paisoar::train {

// One epoch's running figures for its progress lines. The loss is the
// epoch's mean from its first step, across a resume (the checkpoint carries
// its sum and count); the times count this process's steps only.
struct EpochTally {
  explicit EpochTally(double train_start_s) : train_start_s(train_start_s) {}
  // The resumed epoch's loss before the checkpoint.
  void carry(double loss_sum_before, int64_t steps_before) {
    loss_sum += loss_sum_before;
    loss_steps += steps_before;
  }
  void add(const StepOutcome& outcome) {
    loss_sum += outcome.loss;
    wait_sum += outcome.wait_s;
    ++steps;
    ++loss_steps;
  }
  double mean_loss() const { return loss_steps > 0 ? loss_sum / loss_steps : 0; }

  double train_start_s;  // the training clock (EvalSchedule::train_seconds) at the epoch's start
  double loss_sum = 0, wait_sum = 0;
  int64_t steps = 0;       // taken by this process in the epoch
  int64_t loss_steps = 0;  // in loss_sum: the epoch's steps, before a resume too
};

// Used by one thread per rank. Every rank builds it and calls the same
// methods with the same arguments: most are collective.
class TrainRun {
 public:
  // Collective over `world`. Checks the task, builds every part and resumes
  // from the newest checkpoint under checkpoint.resume. `config`, `task` and
  // `mesh` (null without model parallelism) must outlive the run. `env`:
  // what the edge read from the environment (the Trainer's RunEnvironment).
  TrainRun(const TrainConfig& config, const TrainTask& task, std::shared_ptr<comm::Communicator> world,
           hybrid::HybridMesh* mesh, const RunEnvironment& env);
  TrainRun(const TrainRun&) = delete;
  TrainRun& operator=(const TrainRun&) = delete;

  const RunPlan& plan() const { return plan_; }
  RunReport& report() { return *report_; }
  // Where the run starts: step 0 and the first batch, or the checkpoint's.
  const ResumePoint& start() const { return start_; }

  // Starts the loader's epoch at the start's batch (in the epoch resumed) or
  // at 0, and the epoch's progress bar; returns the epoch's first step index.
  int64_t begin_epoch(int64_t epoch, int64_t step);
  // One optimizer step: the micro-steps' forward and backward, then the
  // update (unless skipped) and the LR schedule's step, profiled. `logged`:
  // the step will be logged (RunReport::log_due), so its gradient norm is
  // measured (collective where the gradients are split across ranks).
  StepOutcome step(int64_t step, bool logged);
  // After step `step` (counted from 1) of an epoch whose figures are
  // `tally`: its checkpoint, when one is due.
  void save_if_due(int64_t step, const EpochTally& tally);
  // Collective: every rank's figures since the previous logged step are
  // gathered; the lead writes its progress line and metrics record.
  void log_step(int64_t epoch, int64_t step, const EpochTally& tally, double train_s);
  // One evaluation pass (collective); null without task.eval_data.
  std::function<double()> evaluation();

  // Collective: the state the run started from (start()) written to
  // `target_dir` as a checkpoint of this layout at the same step (a new
  // CheckpointManager there). Returns the step file written.
  std::string save_as(const std::string& target_dir);

  // Collective, once, after the last step: the final checkpoint (unless that
  // step's was written), any evaluation still owed, the end-of-run reports,
  // the synchroniser's finish and the summary line.
  TrainResult finish(int64_t step, double final_loss, EvalSchedule& evals);

 private:
  TrainerState trainer_state();  // what a checkpoint holds, over the parts built so far
  ResumePoint resume();          // collective: the newest checkpoint restored, or step 0
  void print_opening();          // the lead's first lines; builds the profiler
  // Collective (one agreement): this rank's peak predicted before the first
  // step (memory_prediction.h) and printed by the lead; every rank throws
  // ConfigError when any rank's is over its budget.
  void check_memory();
  // Collective: the samples dropped under data.on_error: skip over every
  // replica, into `result` and the lead's line and metrics record.
  void report_skipped_samples(int64_t step, TrainResult& result);
  // After each optimizer step under loss scaling: on the 5th skip in a row
  // (at most 3 times a run) the last micro-batch's non-finite gradients are
  // traced to a region and printed (MicroSteps::explain_skipped_steps).
  void explain_skips(int64_t step, bool stepped);
  bool save(int64_t step);       // collective: save_checkpoint under checkpoint.on_error
  BatchShape batch_shape() const;

  const TrainConfig& config_;
  const TrainTask& task_;
  const std::shared_ptr<comm::Communicator> world_;
  hybrid::HybridMesh* const mesh_;
  const std::shared_ptr<comm::Communicator> data_comm_;  // the world without model parallelism
  const RankPlace place_;
  data::DataLoader loader_;
  const RunPlan plan_;
  const std::string config_text_;  // dump_config, saved with each checkpoint
  amp::GradScaler scaler_;
  amp::FiniteLossCheck finite_loss_;
  // The parts whose construction is collective, built by the constructor's
  // body one after another in the order every rank runs their collectives
  // (never by member order); set for the rest of the run afterwards.
  std::optional<checkpoint::CheckpointManager> checkpoints_;
  // checkpoint.async: the background writer's own group of all ranks (its
  // collectives never meet the step's); null otherwise.
  std::shared_ptr<comm::Communicator> checkpoint_comm_;
  // The checkpoint a resume starts from, read once (the pipeline's split and
  // the resume both come from it); nullopt without one or checkpoint.resume.
  std::optional<ResumeSource> newest_;
  std::unique_ptr<MicroSteps> micro_;
  std::unique_ptr<GradSync> sync_;
  std::optional<optim::LrSchedule> schedule_;
  TrainerState state_;
  ResumePoint start_;
  int64_t saved_step_ = 0;         // the step of the newest checkpoint
  RunProgress progress_;           // the epoch's loss so far (save_if_due's tally), saved with a checkpoint
  std::optional<memory::CheckpointRegions> recompute_;  // activation_checkpointing
  std::optional<amp::RegionChain> regions_;             // recompute_ and ZeRO-3's gathering, as the run has them
  std::unique_ptr<hybrid::TiedParameters> tied_;        // parameters several stages hold; null: none
  std::optional<RunReport> report_;
  std::optional<profiler::StepProfiler> prof_;
  std::optional<StepTools> tools_;
  std::optional<LogWindow> log_window_;
  RunStats stats_;
  double grad_norm_ = -1;  // the last step's total gradient norm (clipped or logged steps), else -1
  int64_t predicted_peak_bytes_ = -1;  // check_memory's, -1: not predicted
  int64_t skip_run_ = 0, traces_ = 0;  // explain_skips' count of skips in a row, and of traces
  // checkpoint.async; last, so it is destroyed (waiting for the save in
  // flight) before the parts that save reads.
  std::optional<AsyncSaver> async_;
};

}  // namespace paisoar::train
