// parse_recovery: the launcher's and rank 0's lines of a restarted
// `paisoar train` job, in the formats docs/LAUNCH.md and docs/TRAIN.md show.
#include "bench/recovery_timeline.h"

#include <cstdio>
#include <stdexcept>

namespace paisoar::bench {
namespace {

constexpr const char* kRank0 = "[rank0]: ";

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// The step of "[rank0]: epoch E step S/T ...", or -1.
int64_t step_of(const TimedLine& line) {
  if (line.err || !starts_with(line.text, kRank0)) return -1;
  long long epoch = 0, step = 0, total = 0;
  if (std::sscanf(line.text.c_str() + 9, "epoch %lld step %lld/%lld", &epoch, &step, &total) != 3) return -1;
  return step;
}

std::string tail_of(const std::vector<TimedLine>& lines) {
  std::string out;
  for (size_t i = lines.size() > 30 ? lines.size() - 30 : 0; i < lines.size(); ++i) {
    out += (lines[i].err ? "  err| " : "  out| ") + lines[i].text + "\n";
  }
  return out;
}

}  // namespace

std::map<int64_t, double> parse_steps(const std::vector<TimedLine>& lines) {
  std::map<int64_t, double> steps;
  for (const auto& line : lines) {
    const int64_t step = step_of(line);
    if (step >= 0) steps.emplace(step, line.seconds);
  }
  return steps;
}

RecoveryTimeline parse_recovery(const std::vector<TimedLine>& lines) {
  RecoveryTimeline t;
  bool restarted = false;
  for (const auto& line : lines) {
    const std::string& s = line.text;
    if (line.err && starts_with(s, "paisoar launch: restarting the group")) {
      if (restarted) throw std::runtime_error("the group was restarted more than once:\n" + tail_of(lines));
      restarted = true;
      t.restart_s = line.seconds;
    } else if (line.err && !restarted && t.noticed_s < 0 && starts_with(s, "paisoar launch: rank ") &&
               (s.find(" was killed by signal ") != std::string::npos ||
                s.find(" exited with code ") != std::string::npos)) {
      t.noticed_s = line.seconds;
      t.failure = s;
    } else if (!line.err && starts_with(s, std::string(kRank0) + "paisoar train: ")) {
      if (!restarted && t.started_s < 0) t.started_s = line.seconds;
      if (restarted && t.header_s < 0) t.header_s = line.seconds;
    } else if (!line.err && restarted && t.resumed_s < 0 && starts_with(s, std::string(kRank0) + "resumed from ")) {
      const auto at = s.rfind(" at step ");
      if (at != std::string::npos) {
        t.resumed_s = line.seconds;
        t.resumed_step = std::stoll(s.substr(at + 9));
      }
    } else if (const int64_t step = step_of(line); step >= 0) {
      (restarted ? t.steps_after : t.steps_before).emplace(step, line.seconds);
    }
  }
  const char* missing = t.noticed_s < 0    ? "the launcher's report of the dead rank"
                        : t.restart_s < 0  ? "the launcher's restart"
                        : t.resumed_s < 0  ? "rank 0's \"resumed from\" line after the restart"
                        : t.header_s < 0   ? "rank 0's run header after the restart"
                        : t.steps_after.empty() ? "a training step after the restart"
                        : t.steps_before.empty() ? "a training step before the kill"
                                                 : nullptr;
  if (missing != nullptr) {
    throw std::runtime_error(std::string("the job's output has no ") + missing + "; its last lines:\n" +
                             tail_of(lines));
  }
  return t;
}

std::map<int64_t, double> step_gaps(const std::map<int64_t, double>& steps, int64_t from, int64_t to) {
  std::map<int64_t, double> gaps;
  for (int64_t s = from; s <= to; ++s) {
    const auto here = steps.find(s), before = steps.find(s - 1);
    if (here != steps.end() && before != steps.end()) gaps[s] = here->second - before->second;
  }
  return gaps;
}

}  // namespace paisoar::bench
