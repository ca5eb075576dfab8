// diagnose_hang: the ranks' waits (a collective or transfer in flight that
// the rank has waited for since wait() began, past the limit) from the
// longest; for each, the ranks of its group that did not issue that
// collective, and what each does instead; or the ranks whose collective of
// that number is another call. The first wait that names someone decides.
// Ranks in setup, a checkpoint or an evaluation, and waits that began in a
// checkpoint or an evaluation, get limits.long_activity_s.
#include "launch/hang_diagnosis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace paisoar::launch {
namespace {

using util::Activity;
using util::FlightEntry;
using util::FlightGroup;

std::string group_key(const FlightGroup& g) {
  std::string key = g.name;
  for (int m : g.members) {
    key += ',';  // appended apart: gcc 12 warns (-Wrestrict, a false positive) on "," + to_string
    key += std::to_string(m);
  }
  return key;
}

int seconds(int64_t ns) { return static_cast<int>(std::floor(static_cast<double>(ns) / 1e9)); }
int64_t nanoseconds(double s) { return static_cast<int64_t>(s * 1e9); }

bool long_activity(Activity a) {
  return a == Activity::Setup || a == Activity::Checkpoint || a == Activity::Evaluation;
}

// One rank's record, indexed.
struct View {
  const RankRecord* rank = nullptr;
  std::map<std::string, std::map<int64_t, const FlightEntry*>> collectives;  // group key -> seq -> entry
  const FlightGroup& group_of(const FlightEntry& e) const { return rank->record.groups[static_cast<size_t>(e.group)]; }
  std::string key_of(const FlightEntry& e) const { return group_key(group_of(e)); }
  // The highest collective number it issued in group `key` (0: none).
  int64_t issued(const std::string& key) const {
    const auto it = collectives.find(key);
    return it == collectives.end() ? 0 : it->second.rbegin()->first;
  }
};

struct Wait {
  const View* view;
  const FlightEntry* entry;
  int64_t waited_ns;
};

std::string what(const View& v, const FlightEntry& e) {
  std::ostringstream out;
  if (e.peer >= 0) {
    out << e.op << (e.op == "recv" ? " from" : " to") << " rank " << e.peer;
  } else {
    out << e.op << " #" << e.seq << " of group '" << v.group_of(e).name << "'";
  }
  out << " (" << e.numel << " " << e.dtype << ")";
  return out.str();
}

std::string who(const RankRecord& r) {
  return "rank " + std::to_string(r.global_rank) + " (local_rank " + std::to_string(r.local_rank) + ", pid " +
         std::to_string(r.pid) + ")";
}

std::string doing(const util::FlightSnapshot& s, int64_t now_ns) {
  std::string text = util::activity_name(s.activity);
  if (s.step >= 0) text += " at step " + std::to_string(s.step);
  return text + " for " + std::to_string(seconds(now_ns - s.activity_since_ns)) + " s";
}

bool same_call(const FlightEntry& a, const FlightEntry& b) {
  return a.op == b.op && a.dtype == b.dtype && a.numel == b.numel;
}

class Diagnosis {
 public:
  Diagnosis(const std::vector<RankRecord>& ranks, int64_t now_ns, const HangLimits& limits)
      : now_(now_ns), limits_(limits) {
    for (const RankRecord& r : ranks) {
      if (r.record.rank < 0) continue;
      View v;
      v.rank = &r;
      for (const FlightEntry& e : r.record.entries) {
        if (e.peer < 0) v.collectives[group_key(r.record.groups[static_cast<size_t>(e.group)])][e.seq] = &e;
      }
      views_.push_back(std::move(v));
    }
    for (const View& v : views_) {
      if (v.rank->stopped) continue;  // not waiting: stopped (its peers' waits name it)
      for (const FlightEntry& e : v.rank->record.entries) {
        if (!e.awaited()) continue;
        // A wait that began in a checkpoint (a background save's too) or an
        // evaluation may be for peers still writing or evaluating.
        const bool long_one = e.activity == Activity::Checkpoint || e.activity == Activity::Evaluation;
        const int64_t waited = now_ - e.waited_ns;
        if (waited >= nanoseconds(long_one ? limits_.long_activity_s : limits_.wait_s)) waits_.push_back({&v, &e, waited});
      }
    }
    std::stable_sort(waits_.begin(), waits_.end(), [](const Wait& a, const Wait& b) { return a.waited_ns > b.waited_ns; });
  }

  std::optional<HangVerdict> verdict() const {
    for (const Wait& w : waits_) {
      if (auto v = verdict_for(w)) return v;
    }
    return std::nullopt;
  }

 private:
  const View* view_of(int global_rank) const {
    for (const View& v : views_) {
      if (v.rank->global_rank == global_rank) return &v;
    }
    return nullptr;
  }

  // The entry `v` waits in, if any (the longest).
  const FlightEntry* waiting_in(const View& v) const {
    for (const Wait& w : waits_) {
      if (w.view == &v) return w.entry;
    }
    return nullptr;
  }

  std::string waits_text() const {
    std::string text;
    for (const Wait& w : waits_) {
      text += std::string(text.empty() ? "" : "; ") + "rank " + std::to_string(w.view->rank->global_rank) +
              " has waited " + std::to_string(seconds(w.waited_ns)) + " s in " + what(*w.view, *w.entry) +
              " (issued in " + util::activity_name(w.entry->activity) +
              (w.entry->step >= 0 ? " at step " + std::to_string(w.entry->step) : "") + ")";
    }
    return text;
  }

  // What laggard `v` does instead of joining `w`; "" while it may still be
  // making progress.
  std::string laggard_state(const View& v, const Wait& w) const {
    const RankRecord& r = *v.rank;
    const auto& s = r.record;
    if (r.stopped) return "it is stopped (SIGSTOP; it was in " + doing(s, now_) + ")";
    if (const FlightEntry* e = waiting_in(v)) {
      std::string text = "it has waited " + std::to_string(seconds(now_ - e->waited_ns)) + " s in " + what(v, *e) +
                         " instead";
      const View& waiter = *w.view;
      if (e->peer < 0 && w.entry->peer < 0 && v.key_of(*e) == waiter.key_of(*w.entry)) {
        return text + ": it issued " + std::to_string(w.entry->seq - e->seq) +
               " collective(s) fewer of this group than rank " + std::to_string(waiter.rank->global_rank) +
               " (mismatched control flow: a rank skipped a collective or took another branch; every rank must "
               "issue the same collectives in the same order)";
      }
      // Each waits for the other in another group. Which one is wrong (a
      // collective skipped by one, or an extra one issued by the other) the
      // records cannot tell; both counts are given.
      if (e->peer < 0 && waiter.issued(v.key_of(*e)) < e->seq) {
        return text + ", which rank " + std::to_string(waiter.rank->global_rank) + " has not issued (it issued " +
               std::to_string(waiter.issued(v.key_of(*e))) + " of group '" + v.group_of(*e).name +
               "'): each waits for the other (mismatched control flow: a collective skipped on one rank or an "
               "extra one on the other; every rank must issue the same collectives in the same order)";
      }
      return text + " (mismatched control flow: the ranks wait for each other in different collectives)";
    }
    // Busy: only hung when it has stayed in one activity past its limit.
    const int64_t in_activity = now_ - s.activity_since_ns;
    if (in_activity < nanoseconds(long_activity(s.activity) ? limits_.long_activity_s : limits_.wait_s)) return "";
    std::string text = "it has been in " + doing(s, now_);
    if (s.activity == Activity::Data) text += " (stuck in its data loader: a hung dataset, worker or file system)";
    return text;
  }

  std::optional<HangVerdict> verdict_for(const Wait& w) const {
    const View& waiter = *w.view;
    std::vector<const View*> laggards;
    std::vector<std::pair<const View*, const FlightEntry*>> differing;
    if (w.entry->peer >= 0) {
      if (const View* p = view_of(w.entry->peer)) laggards.push_back(p);
    } else {
      const FlightGroup& g = waiter.group_of(*w.entry);
      const std::string key = group_key(g);
      for (int m : g.members) {
        const View* v = view_of(m);
        if (!v || v == &waiter) continue;  // another node's rank is not visible here
        if (v->issued(key) < w.entry->seq) {
          laggards.push_back(v);
          continue;
        }
        const auto& mine = v->collectives.at(key);
        const auto at = mine.find(w.entry->seq);
        if (at != mine.end() && !same_call(*at->second, *w.entry)) differing.emplace_back(v, at->second);
      }
    }
    HangVerdict verdict;
    std::ostringstream text;
    if (!laggards.empty()) {
      const std::string target = w.entry->peer >= 0 ? "the other side of rank " +
                                                          std::to_string(waiter.rank->global_rank) + "'s " +
                                                          what(waiter, *w.entry)
                                                    : what(waiter, *w.entry);
      std::vector<std::pair<const View*, std::string>> named;
      int culprit = -1;
      for (const View* v : laggards) {
        const std::string state = laggard_state(*v, w);
        if (state.empty()) return std::nullopt;  // still within its limits: not (yet) a hang
        if (culprit < 0 || v->rank->stopped) culprit = v->rank->global_rank;  // a stopped one first
        named.emplace_back(v, state);
      }
      for (size_t i = 0; i < named.size(); ++i) {
        text << (i ? "; " : "") << who(*named[i].first->rank) << " did not reach " << target << ": "
             << named[i].second;
      }
      verdict.culprit = culprit;
    } else if (!differing.empty()) {
      verdict.culprit = differing.front().first->rank->global_rank;
      text << "collective #" << w.entry->seq << " of group '" << waiter.group_of(*w.entry).name
           << "' differs between ranks: rank " << waiter.rank->global_rank << " called " << what(waiter, *w.entry)
           << " and has waited in it " << seconds(w.waited_ns) << " s";
      for (const auto& [v, e] : differing) text << ", rank " << v->rank->global_rank << " called " << what(*v, *e);
      text << " (mismatched collectives: every rank must issue the same collectives in the same order with the "
              "same shapes)";
    } else {
      // Everyone joined it: a stopped member holds it; else a slow transport,
      // which the collective timeout reports.
      const auto stopped = std::find_if(views_.begin(), views_.end(), [](const View& v) { return v.rank->stopped; });
      if (stopped == views_.end()) return std::nullopt;
      verdict.culprit = stopped->rank->global_rank;
      text << who(*stopped->rank) << " is stopped (SIGSTOP) inside " << what(waiter, *w.entry)
           << ", which the others wait in";
    }
    verdict.message = "hang: " + text.str() + ". Waiting: " + waits_text();
    return verdict;
  }

  int64_t now_;
  HangLimits limits_;
  std::vector<View> views_;
  std::vector<Wait> waits_;
};

}  // namespace

std::optional<HangVerdict> diagnose_hang(const std::vector<RankRecord>& ranks, int64_t now_ns,
                                         const HangLimits& limits) {
  return Diagnosis(ranks, now_ns, limits).verdict();
}

}  // namespace paisoar::launch
