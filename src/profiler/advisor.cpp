// The advisor's rules (see advisor.h): each one checks its threshold and, when
// it trips, states the numbers and the change to make.
#include "paisoar/profiler/advisor.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

namespace paisoar::profiler {
namespace {

std::string fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

std::string ms(double seconds) { return fixed(1e3 * seconds, 1) + " ms"; }
std::string percent(double fraction) { return fixed(100 * fraction, 1) + "%"; }

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

void check_data(const RunMeasurements& run, std::vector<Advice>& out) {
  const double f = run.fraction(Phase::DataWait);
  if (f <= kDataBoundFraction) return;
  out.push_back(
      {kDataBound,
       "waiting for data " + ms(run.phase_mean_s[phase_index(Phase::DataWait)]) + " of " +
           ms(run.step_mean_s) + " per step (" + percent(f) + " > " +
           percent(kDataBoundFraction) + ")",
       "feed the model faster: raise DataLoaderOptions::workers (up to the free cores) and "
       "prefetch_factor; convert the images to record shards once (paisoar convert) instead of "
       "decoding scattered files; keep batches uint8 and normalise/flip on the device "
       "(data::DevicePreprocess); decode JPEGs at reduced scale when the crop is small"});
}

void check_communication(const RunMeasurements& run, std::vector<Advice>& out) {
  const double f = run.fraction(Phase::Communication);
  if (f <= kCommunicationBoundFraction) return;
  out.push_back(
      {kCommunicationBound,
       "exposed communication " + ms(run.phase_mean_s[phase_index(Phase::Communication)]) +
           " of " + ms(run.step_mean_s) + " per step (" + percent(f) + " > " +
           percent(kCommunicationBoundFraction) + ")",
       "hide or shrink the gradient traffic: keep DdpOptions::overlap on and raise "
       "bucket_cap_mb (fewer, larger collectives); compress (DdpOptions::compression = fp16 or "
       "bf16 halves the bytes, powersgd cuts large matrices far more); across nodes use the "
       "hierarchical allreduce (DdpOptions::hierarchical) and the fastest network; a larger "
       "per-rank batch gives backward more compute to hide it behind"});
}

void check_loss_scale(const RunMeasurements& run, std::vector<Advice>& out) {
  const auto& h = run.loss_scale_history;
  if (h.size() < 2) return;
  const size_t first = h.size() > kLossScaleWindow ? h.size() - kLossScaleWindow : 1;
  size_t falls = 0;
  for (size_t i = first; i < h.size(); ++i) falls += h[i] < h[i - 1] ? 1 : 0;
  const size_t updates = h.size() - first;
  const bool collapsed = h.back() > 0 ? h.front() / h.back() >= kLossScaleCollapseFactor
                                      : h.front() > 0;
  if (falls <= kLossScaleMaxFalls && !collapsed) return;
  std::string evidence = "the loss scale fell in " + std::to_string(falls) + " of the last " +
                         std::to_string(updates) + " updates (more than " +
                         std::to_string(kLossScaleMaxFalls) + " is unstable); it went from " +
                         fixed(h.front(), 0) + " to " + fixed(h.back(), 0);
  if (h.back() > 0) evidence += " (" + fixed(h.front() / h.back(), 0) + "x lower)";
  if (run.skipped_steps > 0) {
    evidence += "; " + std::to_string(run.skipped_steps) + " optimizer steps skipped for inf/NaN";
  }
  out.push_back(
      {kUnstableLossScale, evidence,
       "gradients keep overflowing in fp16: lower GradScalerOptions::init_scale (e.g. 65536 -> "
       "4096); keep precision-sensitive layers (norms, softmax, the loss) in fp32 with an "
       "amp::PrecisionPolicy; if it persists, halve the learning rate or add warmup, and check "
       "the same run in fp32: if that diverges too, the model or data is at fault, not precision"});
}

// The parts of a step a rank can be slow in, and what to change for each.
struct SlowPart {
  const char* name;
  std::vector<Phase> phases;
  const char* action;
};

const std::vector<SlowPart>& slow_parts() {
  static const std::vector<SlowPart> parts = {
      {"data wait", {Phase::DataWait},
       "its loader cannot keep up: give it more loader workers (data.workers), check its disk or file system "
       "(a slower mount, other I/O on that machine) and that its share of the data is no slower to read or "
       "decode than the others'"},
      {"compute (forward and backward)", {Phase::Forward, Phase::Backward},
       "it computes slower than the others: look for another process on its cores (a CPU hog: compare top or "
       "nvidia-smi there with a fast rank), CPU or GPU throttling, or more work in its batches (uneven "
       "image or sequence sizes); give each rank cores of its own (OMP_NUM_THREADS, taskset, "
       "paisoar launch --omp_num_threads)"},
      {"the optimizer step", {Phase::Optimizer},
       "its optimizer step is slower: uneven parameter shards (ZeRO) or contention on its cores as for "
       "compute"},
  };
  return parts;
}

// The time a rank works: the parts slow_parts() can name.
double busy_s(const std::array<double, kPhaseCount>& p) {
  double sum = 0;
  for (const Phase phase : {Phase::DataWait, Phase::Forward, Phase::Backward, Phase::Optimizer}) {
    sum += p[phase_index(phase)];
  }
  return sum;
}

double part_s(const std::array<double, kPhaseCount>& p, const SlowPart& part) {
  double sum = 0;
  for (Phase phase : part.phases) sum += p[phase_index(phase)];
  return sum;
}

}  // namespace

double data_parallel_efficiency(const RunMeasurements& run) {
  if (run.per_rank_phase_s.size() < 2 || run.step_mean_s <= 0) return -1;
  std::vector<double> busy;
  for (const auto& r : run.per_rank_phase_s) busy.push_back(busy_s(r));
  return std::min(1.0, median(busy) / run.step_mean_s);
}

namespace {

// The median of `values` without entry `skip`.
double median_of_others(const std::vector<double>& values, size_t skip) {
  std::vector<double> others;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i != skip) others.push_back(values[i]);
  }
  return median(others);
}

// A slow rank, against the median of the other ranks, the part of the step it
// loses its time in, and what to change.
bool check_stragglers_by_phase(const RunMeasurements& run, std::vector<Advice>& out) {
  const auto& rows = run.per_rank_phase_s;
  if (rows.size() < 2) return false;
  std::vector<double> busy, waits;
  for (const auto& r : rows) {
    busy.push_back(busy_s(r));
    waits.push_back(r[phase_index(Phase::Communication)]);
  }
  if (median(busy) <= 0) return false;  // no phases measured (profiler off): step times only
  for (size_t rank = 0; rank < rows.size(); ++rank) {
    const double others = median_of_others(busy, rank);
    if (others <= 0) continue;
    const double excess = busy[rank] / others - 1;
    if (excess <= kStragglerExcess) continue;
    const SlowPart* worst = nullptr;
    double worst_excess = 0, worst_mine = 0, worst_others = 0;
    for (const SlowPart& part : slow_parts()) {
      std::vector<double> all;
      for (const auto& r : rows) all.push_back(part_s(r, part));
      const double theirs = median_of_others(all, rank), mine = all[rank];
      if (!worst || mine - theirs > worst_excess) {
        worst = &part;
        worst_excess = mine - theirs;
        worst_mine = mine;
        worst_others = theirs;
      }
    }
    const double step = run.step_mean_s > 0 ? run.step_mean_s : busy[rank];
    out.push_back(
        {kStraggler,
         "rank " + std::to_string(rank) + " is busy " + ms(busy[rank]) + " per step against " + ms(others) +
             " for the other ranks (median; +" + percent(excess) + ", limit +" + percent(kStragglerExcess) +
             "); the excess is in " + worst->name + ": " + ms(worst_mine) + " against " + ms(worst_others) + " (+" +
             ms(worst_excess) + ", " + percent(worst_excess / step) + " of the " + ms(step) +
             " step); the others wait for it in communication and the step's agreements",
         "rank " + std::to_string(rank) + " holds every other rank up at each collective; " + worst->action});
  }
  return true;
}

void check_stragglers(const RunMeasurements& run, std::vector<Advice>& out) {
  if (check_stragglers_by_phase(run, out)) return;
  const auto& t = run.per_rank_step_s;
  if (t.size() < 2) return;
  const double mid = median(t);
  if (mid <= 0) return;
  std::string slow, evidence;
  for (size_t rank = 0; rank < t.size(); ++rank) {
    const double excess = t[rank] / mid - 1;
    if (excess <= kStragglerExcess) continue;
    if (!evidence.empty()) {
      evidence += "; ";
      slow += ", ";
    }
    evidence += "rank " + std::to_string(rank) + ": " + ms(t[rank]) + " per step, +" +
                percent(excess) + " over the median " + ms(mid) + " (limit +" +
                percent(kStragglerExcess) + ")";
    slow += std::to_string(rank);
  }
  if (evidence.empty()) return;
  out.push_back(
      {kStraggler, evidence,
       "every rank waits for the slowest at each allreduce: check the machine of rank(s) " +
           slow + " (other jobs, CPU/GPU throttling, a slower disk or network link; compare "
           "top / nvidia-smi there with a fast rank) and balance the work (equal shard sizes, "
           "similar image sizes per rank, the same loader workers and threads per rank)"});
}

// Below the floor: why (a straggler found above, communication that backward
// is too short to hide, or exposed communication) and what to change.
void check_efficiency(const RunMeasurements& run, std::vector<Advice>& out) {
  const double e = data_parallel_efficiency(run);
  if (e < 0 || e >= kDataParallelEfficiencyFloor) return;
  const auto straggler = std::find_if(out.begin(), out.end(), [](const Advice& a) { return a.verdict == kStraggler; });
  // The median rank's communication and compute.
  std::vector<double> comms, computes;
  for (const auto& r : run.per_rank_phase_s) {
    comms.push_back(r[phase_index(Phase::Communication)]);
    computes.push_back(r[phase_index(Phase::Forward)] + r[phase_index(Phase::Backward)]);
  }
  const double comm = median(comms), compute = median(computes);
  std::string evidence = "the median rank is busy " + percent(e) + " of the " + ms(run.step_mean_s) +
                         " step (limit " + percent(kDataParallelEfficiencyFloor) +
                         "): each rank delivers that share of what it would alone with the same batch; ";
  std::string action;
  if (straggler != out.end()) {
    const std::string& e = straggler->evidence;
    const size_t in = e.find("the excess is in ");
    const std::string part = in == std::string::npos ? "" : e.substr(in + 17, e.find(':', in) - in - 17);
    evidence += "cause: imbalance, the other ranks wait for the straggler named above" +
                (part.empty() ? std::string() : " (slow in " + part + ")");
    action = "fix the straggler (above); until then every rank runs at its pace";
  } else if (comm > 0 && compute < comm) {
    evidence += "cause: a small per-rank batch, backward (" + ms(compute) + " with forward) is shorter than the " +
                ms(comm) + " of exposed communication, so the gradient traffic cannot hide behind it";
    action = "give each rank more work per synchronisation: accumulate gradients (train.grad_accumulation: 4 "
             "syncs once per 4 micro-batches) or raise train.batch_size; compress the gradients "
             "(distributed.compression: fp16 or bf16) to halve the traffic";
  } else {
    evidence += "cause: exposed communication, " + ms(comm) + " per step, and the step's agreements";
    action = "hide or shrink the gradient traffic: keep distributed.overlap on, raise distributed.bucket_cap_mb (fewer, larger "
             "collectives), compress (distributed.compression: fp16 or bf16; powersgd for large matrices)";
  }
  out.push_back({kLowDataParallelEfficiency, evidence, action});
}

// Reads the verdicts found so far in `out`: compute is only the limit when
// neither the data nor the communication is.
void check_compute(const RunMeasurements& run, std::vector<Advice>& out) {
  if (run.mixed_precision) return;
  for (const auto& a : out) {
    if (a.verdict == kDataBound || a.verdict == kCommunicationBound) return;
  }
  const double f = run.fraction(Phase::Forward) + run.fraction(Phase::Backward) +
                   run.fraction(Phase::Optimizer);
  if (f <= kComputeBoundFraction) return;
  out.push_back(
      {kComputeBound,
       "forward + backward + optimizer take " + percent(f) + " of the step (> " +
           percent(kComputeBoundFraction) + ") in full precision",
       run.fast_precision.empty()
           ? "speed up the math: full precision is the fast path on this hardware (no low "
             "precision kernels beat fp32 here), so raise the per-rank batch if the step is "
             "short, give each rank more cores (fewer ranks per machine), or add machines; "
             "if the optimizer alone is a large share, use optim::FlatOptimizer (one fused "
             "loop over flat buffers)"
           : "speed up the math: turn on mixed precision (" + run.fast_precision +
                 "), then raise the per-rank batch into the memory it frees; if the optimizer "
                 "alone is a large share, use optim::FlatOptimizer (one fused loop over flat "
                 "buffers)"});
}

}  // namespace

double RunMeasurements::fraction(Phase phase) const {
  double denominator = step_mean_s;
  if (denominator <= 0) {
    denominator = 0;
    for (double s : phase_mean_s) denominator += s;
  }
  return denominator > 0 ? phase_mean_s[phase_index(phase)] / denominator : 0;
}

RunMeasurements measurements_from(const ProfileSummary& summary) {
  RunMeasurements run;
  run.steps = summary.steps;
  run.step_mean_s = summary.step_mean_s;
  for (size_t p = 0; p < kPhaseCount; ++p) run.phase_mean_s[p] = summary.phases[p].mean_s;
  return run;
}

std::vector<Advice> advise(const RunMeasurements& run) {
  std::vector<Advice> out;
  check_data(run, out);
  check_communication(run, out);
  check_loss_scale(run, out);
  check_stragglers(run, out);
  check_efficiency(run, out);
  check_compute(run, out);
  return out;
}

}  // namespace paisoar::profiler
