// place_ranks_on_cores() and describe_placement().
#include "launch/core_placement.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace paisoar::launch {
namespace {

// A unit a rank gets a share of: a physical core (its hardware threads) or
// one hardware thread.
struct Unit {
  int numa = 0;
  std::vector<int> cpus;
};

// The physical cores of `t`, ordered by NUMA node, package and core id.
std::vector<Unit> cores_of(const CpuTopology& t) {
  std::map<std::tuple<int, int, int>, Unit> by_key;  // (numa, package, core)
  for (const LogicalCpu& cpu : t.cpus) {
    Unit& u = by_key[{cpu.numa, cpu.package, cpu.core}];
    u.numa = cpu.numa;
    u.cpus.push_back(cpu.id);
  }
  std::vector<Unit> cores;
  for (auto& [key, unit] : by_key) cores.push_back(std::move(unit));
  return cores;
}

// Each core's hardware threads as units of their own, siblings side by side.
std::vector<Unit> threads_of(const std::vector<Unit>& cores) {
  std::vector<Unit> threads;
  for (const Unit& core : cores) {
    for (int id : core.cpus) threads.push_back(Unit{core.numa, {id}});
  }
  return threads;
}

// At most `limit` units, taken round-robin across NUMA nodes so a quota
// leaves every node some.
std::vector<Unit> within(std::vector<Unit> units, int limit) {
  if (limit <= 0 || static_cast<int>(units.size()) <= limit) return units;
  std::map<int, std::vector<Unit>> by_node;
  for (Unit& u : units) by_node[u.numa].push_back(std::move(u));
  std::vector<Unit> kept;
  for (std::size_t i = 0; static_cast<int>(kept.size()) < limit; ++i) {
    for (auto& [node, list] : by_node) {
      if (i < list.size() && static_cast<int>(kept.size()) < limit) kept.push_back(list[i]);
    }
  }
  std::sort(kept.begin(), kept.end(), [](const Unit& a, const Unit& b) {
    return std::tie(a.numa, a.cpus.front()) < std::tie(b.numa, b.cpus.front());
  });
  return kept;
}

// Deals `per_rank` units to each of `ranks` ranks: rank r prefers NUMA node
// r mod (nodes), takes its units from one node where one has enough free
// (that node first, else the one with most free), else from the fullest
// nodes in turn.
std::vector<std::vector<int>> deal(const std::vector<Unit>& units, int ranks, int per_rank) {
  std::map<int, std::vector<const Unit*>> free;  // by NUMA node, in order
  for (const Unit& u : units) free[u.numa].push_back(&u);
  std::vector<int> nodes;
  for (const auto& [node, list] : free) nodes.push_back(node);
  std::vector<std::vector<int>> out(ranks);
  for (int r = 0; r < ranks; ++r) {
    int need = per_rank;
    while (need > 0) {
      int pick = nodes[r % nodes.size()];
      if (static_cast<int>(free[pick].size()) < need) {
        for (int node : nodes) {
          if (free[node].size() > free[pick].size()) pick = node;
        }
      }
      std::vector<const Unit*>& list = free[pick];
      const int take = std::min<int>(need, static_cast<int>(list.size()));
      for (int i = 0; i < take; ++i) {
        out[r].insert(out[r].end(), list[i]->cpus.begin(), list[i]->cpus.end());
      }
      list.erase(list.begin(), list.begin() + take);
      need -= take;
    }
    std::sort(out[r].begin(), out[r].end());
  }
  return out;
}

std::string plural(int n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

}  // namespace

BindTo bind_for_program(BindTo asked, bool runs_under_python) {
  if (asked != BindTo::kAuto) return asked;
  return runs_under_python ? BindTo::kNone : BindTo::kCore;
}

CorePlacement place_ranks_on_cores(const CpuTopology& topology, int local_ranks, BindTo bind_to) {
  CorePlacement p;
  if (bind_to == BindTo::kNone) {
    p.why_unbound = "--bind_to none";
    return p;
  }
  if (local_ranks <= 0 || topology.cpus.empty()) {
    p.why_unbound = "no CPUs in the launcher's affinity mask";
    return p;
  }
  const std::vector<Unit> all_cores = cores_of(topology);
  const std::vector<Unit> cores = within(all_cores, topology.quota_cpus);
  std::vector<Unit> units;
  if (local_ranks <= static_cast<int>(cores.size())) {
    units = cores;
    p.unit = "core";
  } else {
    units = within(threads_of(all_cores), topology.quota_cpus);
    p.unit = "hardware thread";
    if (local_ranks > static_cast<int>(units.size())) {
      const int cpus = static_cast<int>(units.size());
      p.why_unbound = plural(local_ranks, "rank") + " on " + plural(cpus, "CPU") +
                      (topology.quota_cpus > 0 && topology.quota_cpus < static_cast<int>(topology.cpus.size())
                           ? " (the cgroup's CPU quota)"
                           : "");
      p.unit.clear();
      return p;
    }
  }
  p.units_per_rank = static_cast<int>(units.size()) / local_ranks;
  p.cpus_of_rank = deal(units, local_ranks, p.units_per_rank);
  return p;
}

std::vector<std::string> describe_placement(const CorePlacement& placement, const CpuTopology& topology,
                                            int first_global_rank) {
  if (!placement.bound()) return {"ranks not bound to cores: " + placement.why_unbound};
  std::map<int, int> numa_of;
  for (const LogicalCpu& cpu : topology.cpus) numa_of[cpu.id] = cpu.numa;
  std::vector<std::string> lines;
  for (std::size_t i = 0; i < placement.cpus_of_rank.size(); ++i) {
    const std::vector<int>& cpus = placement.cpus_of_rank[i];
    std::set<int> nodes;
    for (int id : cpus) nodes.insert(numa_of[id]);
    std::string line = "rank " + std::to_string(first_global_rank + static_cast<int>(i)) + " (local " +
                       std::to_string(i) + "): CPUs " + cpu_list_text(cpus) + " (" +
                       plural(placement.units_per_rank, placement.unit) + ", NUMA node";
    line += nodes.size() == 1 ? " " : "s ";
    bool first = true;
    for (int n : nodes) {
      if (!first) line += ',';
      line += std::to_string(n);
      first = false;
    }
    line += ')';
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace paisoar::launch
