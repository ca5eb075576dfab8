// StepProfiler: times each training step by phase (data wait, forward,
// backward, exposed communication, optimizer, other), keeps summary statistics
// for every step and full detail only for a chosen window of steps, which it
// writes as a Chrome-trace timeline, optionally with LibTorch's per-op profile
// of the same steps.
//
//   profiler::ProfilerOptions options;
//   options.trace_start_step = 100;
//   options.trace_steps = 5;
//   options.trace_path = "trace.json";
//   profiler::StepProfiler prof(options);
//   for (int64_t step = 0; step < steps; ++step) {
//     prof.begin_step(step);
//     data::Batch batch;
//     { auto s = prof.phase(Phase::DataWait); batch = loader.next(); }
//     torch::Tensor loss;
//     { auto s = prof.phase(Phase::Forward);  loss = criterion(model(batch.data), batch.target); }
//     { auto s = prof.phase(Phase::Backward); loss.backward(); }
//     const auto& rs = model.reducer().last_stats();
//     prof.add(Phase::Communication, rs.exposed_comm_s, /*carved_from=*/Phase::Backward);
//     add_bucket_spans(prof, rs.bucket_spans);
//     { auto s = prof.phase(Phase::Optimizer); optimizer.step(); }
//     prof.end_step();
//   }
//   const auto summary = prof.summary();
//   std::cout << format_report(summary, advise(measurements_from(summary)));
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "paisoar/profiler/chrome_trace.h"
#include "paisoar/profiler/phase.h"
#include "paisoar/profiler/profile_summary.h"

namespace paisoar::profiler {

namespace detail {
class OpProfile;
}

struct ProfilerOptions {
  // false: every call is a no-op (phase scopes read no clock) and summary() is empty.
  bool enabled = true;
  // The trace window: steps trace_start_step .. trace_start_step + trace_steps - 1
  // (step numbers as given to begin_step). trace_start_step < 0 or
  // trace_steps == 0: no window, only summary statistics.
  int64_t trace_start_step = -1;
  int64_t trace_steps = 0;
  // Where the window's Chrome trace is written when its last step ends; empty:
  // kept in memory for trace_spans() / write_chrome_trace(path).
  std::string trace_path;
  // Also record LibTorch's per-op profile (the legacy autograd profiler, CPU
  // times) over the window and write it to op_trace_path, a Chrome trace too.
  // Needs a window and an op_trace_path.
  bool op_profile = false;
  std::string op_trace_path;
  // This process's rank: the trace's "pid", so traces of several ranks can be
  // loaded side by side.
  int rank = 0;
};

// Thread safety: begin_step, phase (and the scope it returns), add, end_step,
// summary and the destructor belong to the training thread (the op profile is
// thread-local to it). add_span, trace_spans and write_chrome_trace may be
// called from any thread (a communication thread): the window's spans are
// guarded by a mutex.
class StepProfiler {
 public:
  // Seconds on some monotonic clock; spans given to add_span must use the same.
  using Clock = std::function<double()>;
  // std::chrono::steady_clock, in seconds since its epoch: the default clock,
  // and the one ddp::BucketSpan uses.
  static double steady_now_s();

  // Throws c10::Error for inconsistent options (negative trace_steps,
  // op_profile without a window or an op_trace_path). `clock` empty: steady_now_s.
  explicit StepProfiler(ProfilerOptions options = {}, Clock clock = {});
  // A window still open is dropped: nothing is written (the op profiler stops).
  ~StepProfiler();
  StepProfiler(const StepProfiler&) = delete;
  StepProfiler& operator=(const StepProfiler&) = delete;

  // Times one phase from its construction to stop() or its destruction, and
  // draws it on the timeline when the step is in the window. Movable; a
  // moved-from or stopped scope does nothing.
  class PhaseScope {
   public:
    PhaseScope(PhaseScope&& other) noexcept;
    PhaseScope& operator=(PhaseScope&&) = delete;
    PhaseScope(const PhaseScope&) = delete;
    ~PhaseScope() { stop(); }
    void stop();

   private:
    friend class StepProfiler;
    PhaseScope(StepProfiler* owner, Phase phase, double begin_s)
        : owner_(owner), phase_(phase), begin_s_(begin_s) {}
    StepProfiler* owner_;  // null: inert
    Phase phase_;
    double begin_s_;
  };

  // Starts step `step`. REQUIRES: no step open; step numbers increase. The
  // first step of the window starts the op profile.
  void begin_step(int64_t step);
  // REQUIRES: a step is open. Phases of one step should not overlap.
  [[nodiscard]] PhaseScope phase(Phase phase);
  // Adds `seconds` (finite, >= 0) measured elsewhere to this step's `phase`
  // (the loader's Batch::wait_s, DDP's exposed communication). Counts only: no
  // span is drawn (use add_span for the timeline). REQUIRES: a step is open.
  void add(Phase phase, double seconds);
  // The same, for time that was already inside another phase's scope (DDP's
  // exposed communication happens at the end of backward): at end_step it is
  // taken out of `carved_from` (which does not go below 0).
  void add(Phase phase, double seconds, Phase carved_from);
  // A span on the timeline, e.g. one bucket's communication. Kept only while
  // the window is open (returns false otherwise). Any thread.
  bool add_span(std::string name, std::string category, double begin_s, double end_s,
                std::map<std::string, double> args = {}, int row = kCommunicationRow);
  // Ends the open step: its time goes into the summary; in the window, a
  // "step" span and its phases are kept. After the window's last step: writes
  // the trace (when trace_path is set) and the op trace. Throws if a phase
  // scope is still open.
  void end_step();

  ProfileSummary summary() const;
  // The window's spans so far (steps, phases, add_span), in the order they ended.
  std::vector<TraceSpan> trace_spans() const;
  // Writes the window's spans so far (options().trace_path, or `path`).
  void write_chrome_trace() const;
  void write_chrome_trace(const std::string& path) const;

  double now() const { return clock_(); }
  bool in_window(int64_t step) const;
  const ProfilerOptions& options() const { return options_; }

 private:
  void end_phase(Phase phase, double begin_s);
  void close_window();

  const ProfilerOptions options_;
  const Clock clock_;

  // Training thread only.
  bool in_step_ = false;
  bool any_step_ = false;
  int64_t step_ = 0;
  double step_begin_s_ = 0;
  int open_phases_ = 0;
  std::array<double, kPhaseCount> step_phase_s_{};
  std::array<double, kPhaseCount> step_carved_s_{};
  ProfileSummary totals_;  // sums (means and fractions are filled in by summary())
  bool window_open_ = false;
  std::unique_ptr<detail::OpProfile> op_profile_;

  // Shared with add_span's callers.
  mutable std::mutex mutex_;
  bool recording_ = false;        // GUARDED_BY(mutex_)
  std::vector<TraceSpan> spans_;  // GUARDED_BY(mutex_)
};

}  // namespace paisoar::profiler
