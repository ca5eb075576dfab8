// diagnose_hang: find the longest wait in a collective (or a transfer), then
// the ranks of its group that did not issue that collective, and say what
// each of them is doing instead; or the ranks whose collective of that
// number is another one. Ranks in setup, a checkpoint or an evaluation get
// longer (limits.long_activity_s) before they count as hung.
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
  for (int m : g.members) key += "," + std::to_string(m);
  return key;
}

int seconds(int64_t ns) { return static_cast<int>(std::floor(static_cast<double>(ns) / 1e9)); }

// One rank's record, indexed.
struct View {
  const RankRecord* rank = nullptr;
  std::map<std::string, std::map<int64_t, const FlightEntry*>> collectives;  // group key -> seq -> entry
  const FlightEntry* newest = nullptr;  // the last entry it issued
  const FlightGroup& group_of(const FlightEntry& e) const { return rank->record.groups[static_cast<size_t>(e.group)]; }
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

bool long_activity(Activity a) {
  return a == Activity::Setup || a == Activity::Checkpoint || a == Activity::Evaluation;
}

bool same_call(const FlightEntry& a, const FlightEntry& b) {
  return a.op == b.op && a.dtype == b.dtype && a.numel == b.numel;
}

struct Wait {
  const View* view;
  const FlightEntry* entry;
};

// A laggard's state in words, or "" while it may still be making progress
// (a long activity within its limit, a wait still short).
std::string laggard_state(const View& v, const View& waiter, const Wait& w, int64_t now_ns, const HangLimits& limits) {
  const RankRecord& r = *v.rank;
  const auto& s = r.record;
  if (r.stopped) return "it is stopped (SIGSTOP; it was in " + doing(s, now_ns) + ")";
  if (v.newest && v.newest->pending()) {
    const FlightEntry& e = *v.newest;
    const int64_t waited = now_ns - e.enqueued_ns;
    if (waited < static_cast<int64_t>(limits.wait_s * 1e9)) return "";
    std::string text = "it has waited " + std::to_string(seconds(waited)) + " s in " + what(v, e) + " instead";
    if (e.peer < 0 && w.entry->peer < 0 && group_key(v.group_of(e)) == group_key(waiter.group_of(*w.entry))) {
      text += ": it issued " + std::to_string(w.entry->seq - e.seq) + " collective(s) fewer of this group than " +
              "rank " + std::to_string(waiter.rank->global_rank) +
              " (mismatched control flow: a rank skipped a collective or took another branch; every rank must "
              "issue the same collectives in the same order)";
    } else {
      text += " (mismatched control flow: the ranks wait for each other in different collectives)";
    }
    return text;
  }
  if (long_activity(s.activity) && now_ns - s.activity_since_ns < static_cast<int64_t>(limits.long_activity_s * 1e9)) {
    return "";
  }
  std::string text = "it has been in " + doing(s, now_ns);
  if (s.activity == Activity::Data) text += " (stuck in its data loader: a hung dataset, worker or file system)";
  return text;
}

}  // namespace

std::optional<HangVerdict> diagnose_hang(const std::vector<RankRecord>& ranks, int64_t now_ns,
                                         const HangLimits& limits) {
  std::vector<View> views;
  for (const RankRecord& r : ranks) {
    if (r.record.rank < 0) continue;
    View v;
    v.rank = &r;
    for (const FlightEntry& e : r.record.entries) {
      if (e.peer < 0) v.collectives[group_key(r.record.groups[static_cast<size_t>(e.group)])][e.seq] = &e;
      if (!v.newest || e.enqueued_ns >= v.newest->enqueued_ns) v.newest = &e;
    }
    views.push_back(std::move(v));
  }
  const auto view_of = [&](int global_rank) -> const View* {
    for (const View& v : views) {
      if (v.rank->global_rank == global_rank) return &v;
    }
    return nullptr;
  };

  // The waits: each rank's newest entry of a group (or newest transfer), still in flight for long.
  // A collective issued in a checkpoint (a background save's too) or an
  // evaluation may wait for peers still writing or evaluating: the longer limit.
  std::vector<Wait> waits;
  const auto waited_long = [&](const FlightEntry& e) {
    const double limit = long_activity(e.activity) && e.activity != Activity::Setup ? limits.long_activity_s
                                                                                     : limits.wait_s;
    return e.pending() && now_ns - e.enqueued_ns >= static_cast<int64_t>(limit * 1e9);
  };
  for (const View& v : views) {
    for (const auto& [key, by_seq] : v.collectives) {
      const FlightEntry* e = by_seq.rbegin()->second;
      if (waited_long(*e)) waits.push_back({&v, e});
    }
    if (v.newest && v.newest->peer >= 0 && waited_long(*v.newest)) waits.push_back({&v, v.newest});
  }
  if (waits.empty()) return std::nullopt;
  const Wait w = *std::min_element(waits.begin(), waits.end(), [](const Wait& a, const Wait& b) {
    return a.entry->enqueued_ns < b.entry->enqueued_ns;
  });
  const View& waiter = *w.view;

  // Who should have joined it, and who did not, or joined another call.
  std::vector<const View*> laggards;
  std::vector<std::pair<const View*, const FlightEntry*>> differing;
  bool all_known = true;
  if (w.entry->peer >= 0) {
    if (const View* p = view_of(w.entry->peer)) laggards.push_back(p);
  } else {
    const FlightGroup& g = waiter.group_of(*w.entry);
    const std::string key = group_key(g);
    all_known = static_cast<int>(g.members.size()) == g.size;
    for (int m : g.members) {
      const View* v = view_of(m);
      if (!v) {
        all_known = false;  // another node's rank: not visible here
        continue;
      }
      if (v == &waiter) continue;
      const auto group = v->collectives.find(key);
      const FlightEntry* at = nullptr;
      if (group != v->collectives.end()) {
        const auto it = group->second.find(w.entry->seq);
        if (it != group->second.end()) at = it->second;
      }
      const bool reached = group != v->collectives.end() && group->second.rbegin()->first >= w.entry->seq;
      if (!reached) {
        laggards.push_back(v);
      } else if (at && !same_call(*at, *w.entry)) {
        differing.emplace_back(v, at);
      }
    }
  }

  std::ostringstream text;
  const int waited = seconds(now_ns - w.entry->enqueued_ns);
  std::string waiting;  // every rank's long wait, for the message's second half
  for (const Wait& other : waits) {
    waiting += std::string(waiting.empty() ? "" : "; ") + "rank " + std::to_string(other.view->rank->global_rank) +
               " has waited " + std::to_string(seconds(now_ns - other.entry->enqueued_ns)) + " s in " +
               what(*other.view, *other.entry) + " (issued in " + util::activity_name(other.entry->activity) +
               (other.entry->step >= 0 ? " at step " + std::to_string(other.entry->step) : "") + ")";
  }
  if (!laggards.empty()) {
    std::vector<std::pair<const View*, std::string>> named;
    for (const View* v : laggards) {
      const std::string state = laggard_state(*v, waiter, w, now_ns, limits);
      if (state.empty()) return std::nullopt;  // still within its limits: not (yet) a hang
      named.emplace_back(v, state);
    }
    std::stable_sort(named.begin(), named.end(),
                     [](const auto& a, const auto& b) { return a.first->rank->stopped && !b.first->rank->stopped; });
    HangVerdict verdict;
    verdict.culprit = named.front().first->rank->global_rank;
    // A transfer's other side: the send a recv waits for (or the reverse).
    const std::string target = w.entry->peer >= 0 ? "the other side of rank " +
                                                        std::to_string(waiter.rank->global_rank) + "'s " +
                                                        what(waiter, *w.entry)
                                                  : what(waiter, *w.entry);
    for (size_t i = 0; i < named.size(); ++i) {
      text << (i ? "; " : "") << who(*named[i].first->rank) << " did not reach " << target << ": "
           << named[i].second;
    }
    text << ". Waiting: " << waiting;
    verdict.message = "hang: " + text.str();
    return verdict;
  }
  if (!differing.empty()) {
    HangVerdict verdict;
    verdict.culprit = differing.front().first->rank->global_rank;
    text << "collective #" << w.entry->seq << " of group '" << waiter.group_of(*w.entry).name
         << "' differs between ranks: rank " << waiter.rank->global_rank << " called " << what(waiter, *w.entry)
         << " and has waited in it " << waited << " s";
    for (const auto& [v, e] : differing) {
      text << ", rank " << v->rank->global_rank << " called " << what(*v, *e);
    }
    text << " (mismatched collectives: every rank must issue the same collectives in the same order with the "
            "same shapes). Waiting: "
         << waiting;
    verdict.message = "hang: " + text.str();
    return verdict;
  }
  // Everyone joined it: a stopped member holds it.
  (void)all_known;
  for (const View& v : views) {
    if (!v.rank->stopped) continue;
    HangVerdict verdict;
    verdict.culprit = v.rank->global_rank;
    verdict.message = "hang: " + who(*v.rank) + " is stopped (SIGSTOP) inside " + what(waiter, *w.entry) +
                      ", which the others wait in. Waiting: " + waiting;
    return verdict;
  }
  return std::nullopt;
}

}  // namespace paisoar::launch
