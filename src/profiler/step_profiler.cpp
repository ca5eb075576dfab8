// StepProfiler: per-phase step accounting for every step, spans and the op
// profile for the trace window (see step_profiler.h).
#include "paisoar/profiler/step_profiler.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "src/profiler/op_profile.h"

namespace paisoar::profiler {

double StepProfiler::steady_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

StepProfiler::StepProfiler(ProfilerOptions options, Clock clock)
    : options_(std::move(options)), clock_(clock ? std::move(clock) : Clock(&steady_now_s)) {
  TORCH_CHECK(options_.trace_steps >= 0, "ProfilerOptions::trace_steps must be >= 0, got ",
              options_.trace_steps);
  const bool window = options_.trace_start_step >= 0 && options_.trace_steps > 0;
  TORCH_CHECK(!options_.op_profile || window,
              "ProfilerOptions::op_profile records the trace window, but there is none: set "
              "trace_start_step >= 0 and trace_steps > 0");
  TORCH_CHECK(!options_.op_profile || !options_.op_trace_path.empty(),
              "ProfilerOptions::op_profile is on but op_trace_path is empty: say where the "
              "op trace goes");
}

StepProfiler::~StepProfiler() = default;

bool StepProfiler::in_window(int64_t step) const {
  return options_.trace_start_step >= 0 && step >= options_.trace_start_step &&
         step < options_.trace_start_step + options_.trace_steps;
}

void StepProfiler::begin_step(int64_t step) {
  if (!options_.enabled) return;
  TORCH_CHECK(!in_step_, "StepProfiler::begin_step(", step, ") while step ", step_,
              " is still open: call end_step() first");
  TORCH_CHECK(!any_step_ || step > step_, "StepProfiler::begin_step(", step,
              "): step numbers must increase (the last one was ", step_, ")");
  if (window_open_ && !in_window(step)) close_window();  // steps jumped past the window
  in_step_ = true;
  any_step_ = true;
  step_ = step;
  step_phase_s_.fill(0);
  step_carved_s_.fill(0);
  if (!window_open_ && in_window(step)) {
    if (options_.op_profile) op_profile_ = std::make_unique<detail::OpProfile>();
    window_open_ = true;
    std::lock_guard<std::mutex> lock(mutex_);
    recording_ = true;
  }
  step_begin_s_ = clock_();
}

StepProfiler::PhaseScope StepProfiler::phase(Phase phase) {
  if (!options_.enabled) return PhaseScope(nullptr, phase, 0);
  TORCH_CHECK(in_step_, "StepProfiler::phase(", phase_name(phase),
              ") outside a step: call begin_step() first");
  ++open_phases_;
  return PhaseScope(this, phase, clock_());
}

StepProfiler::PhaseScope::PhaseScope(PhaseScope&& other) noexcept
    : owner_(other.owner_), phase_(other.phase_), begin_s_(other.begin_s_) {
  other.owner_ = nullptr;
}

void StepProfiler::PhaseScope::stop() {
  if (owner_ == nullptr) return;
  owner_->end_phase(phase_, begin_s_);
  owner_ = nullptr;
}

void StepProfiler::end_phase(Phase phase, double begin_s) {
  const double end_s = clock_();
  --open_phases_;
  step_phase_s_[phase_index(phase)] += end_s - begin_s;
  if (window_open_) {
    std::lock_guard<std::mutex> lock(mutex_);
    spans_.push_back({phase_name(phase), "phase", begin_s, end_s, kTrainingThreadRow,
                      {{"step", static_cast<double>(step_)}}});
  }
}

void StepProfiler::add(Phase phase, double seconds) {
  if (!options_.enabled) return;
  TORCH_CHECK(in_step_, "StepProfiler::add(", phase_name(phase),
              ") outside a step: call begin_step() first");
  TORCH_CHECK(std::isfinite(seconds) && seconds >= 0, "StepProfiler::add(", phase_name(phase),
              "): seconds must be finite and >= 0, got ", seconds);
  step_phase_s_[phase_index(phase)] += seconds;
}

void StepProfiler::add(Phase phase, double seconds, Phase carved_from) {
  if (!options_.enabled) return;
  TORCH_CHECK(phase != carved_from, "StepProfiler::add(", phase_name(phase),
              "): carved_from must be another phase");
  add(phase, seconds);
  step_carved_s_[phase_index(carved_from)] += seconds;
}

bool StepProfiler::add_span(std::string name, std::string category, double begin_s, double end_s,
                            std::map<std::string, double> args, int row) {
  if (!options_.enabled) return false;
  TORCH_CHECK(end_s >= begin_s, "StepProfiler::add_span('", name, "'): it ends (", end_s,
              ") before it begins (", begin_s, ")");
  std::lock_guard<std::mutex> lock(mutex_);
  if (!recording_) return false;
  spans_.push_back({std::move(name), std::move(category), begin_s, end_s, row, std::move(args)});
  return true;
}

void StepProfiler::end_step() {
  if (!options_.enabled) return;
  TORCH_CHECK(in_step_, "StepProfiler::end_step() without begin_step()");
  TORCH_CHECK(open_phases_ == 0, "StepProfiler::end_step() of step ", step_, " while ",
              open_phases_, " phase scope(s) are still open: end them first");
  const double end_s = clock_();
  const double step_s = end_s - step_begin_s_;
  in_step_ = false;

  double phases_s = 0;
  for (size_t p = 0; p < kPhaseCount; ++p) {
    const double s = std::max(0.0, step_phase_s_[p] - step_carved_s_[p]);
    totals_.phases[p].total_s += s;
    phases_s += s;
  }
  totals_.untracked_total_s += std::max(0.0, step_s - phases_s);
  totals_.step_min_s = totals_.steps == 0 ? step_s : std::min(totals_.step_min_s, step_s);
  totals_.step_max_s = totals_.steps == 0 ? step_s : std::max(totals_.step_max_s, step_s);
  totals_.step_total_s += step_s;
  ++totals_.steps;

  if (!window_open_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    spans_.push_back({"step", "step", step_begin_s_, end_s, kTrainingThreadRow,
                      {{"step", static_cast<double>(step_)}}});
  }
  if (step_ >= options_.trace_start_step + options_.trace_steps - 1) close_window();
}

void StepProfiler::close_window() {
  window_open_ = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    recording_ = false;
  }
  if (op_profile_) {
    auto op_profile = std::move(op_profile_);
    op_profile->finish(options_.op_trace_path);
  }
  if (!options_.trace_path.empty()) write_chrome_trace(options_.trace_path);
}

ProfileSummary StepProfiler::summary() const {
  ProfileSummary s = totals_;
  if (s.steps == 0) return s;
  const double n = static_cast<double>(s.steps);
  s.step_mean_s = s.step_total_s / n;
  s.untracked_mean_s = s.untracked_total_s / n;
  for (auto& p : s.phases) {
    p.mean_s = p.total_s / n;
    p.fraction = s.step_total_s > 0 ? p.total_s / s.step_total_s : 0;
  }
  return s;
}

std::vector<TraceSpan> StepProfiler::trace_spans() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return spans_;
}

void StepProfiler::write_chrome_trace() const {
  TORCH_CHECK(!options_.trace_path.empty(),
              "StepProfiler::write_chrome_trace(): ProfilerOptions::trace_path is empty; set it "
              "or pass a path");
  write_chrome_trace(options_.trace_path);
}

void StepProfiler::write_chrome_trace(const std::string& path) const {
  profiler::write_chrome_trace(path, trace_spans(), options_.rank);
}

}  // namespace paisoar::profiler
