// Which CPUs each rank of this node runs on (`paisoar launch --bind_to`).
// As Open MPI binds its ranks to cores, the launcher gives each local rank a
// share of whole physical cores (all their hardware threads), when there are
// at least as many cores as ranks: ranks are dealt round-robin across NUMA
// nodes, each taking its cores from one node where one has enough. Unlike
// Open MPI, whose processes are single-threaded, a rank gets cores / ranks
// cores, the OMP_NUM_THREADS the launcher gives it. With more ranks than
// cores but no more than hardware threads it binds to hardware threads; with
// more ranks than those it binds nothing. The CPUs come from the launcher's
// own affinity mask (a cgroup's cpuset included) and no more of them than the
// cgroup's CPU quota allows.
#pragma once

#include <string>
#include <vector>

#include "launch/cpu_topology.h"

namespace paisoar::launch {

enum class BindTo {
  kAuto,  // the default: kCore for a program run directly, kNone for one run under Python
  kCore,  // cores (or hardware threads), as above
  kNone,  // --bind_to none: every rank keeps the launcher's mask
};

// What --bind_to auto means for a program: kCore, but kNone when it runs
// under Python, as torchrun leaves its ranks. torch 2.14's ProcessGroupGloo
// frees a finished collective (and the Python tensors it holds) on its own
// thread; a rank confined to one core reaches interpreter shutdown first
// often enough that the late free aborts it ("terminate called without an
// active exception": 4 of 10 runs of a plain DDP script bound, 0 of 10
// unbound). `--bind_to core` binds Python ranks too.
BindTo bind_for_program(BindTo asked, bool runs_under_python);

struct CorePlacement {
  // CPU ids of local rank i; empty when the ranks are not bound.
  std::vector<std::vector<int>> cpus_of_rank;
  // "core" or "hardware thread": what each rank got a share of.
  std::string unit;
  // Units per rank.
  int units_per_rank = 0;
  // Why nothing is bound, e.g. "--bind_to none", "5 ranks on 4 CPUs".
  std::string why_unbound;

  bool bound() const { return !cpus_of_rank.empty(); }
};

CorePlacement place_ranks_on_cores(const CpuTopology& topology, int local_ranks, BindTo bind_to);

// One line per rank for --report_bindings, e.g.
// "rank 1 (local 1): CPUs 2-3 (1 core, NUMA node 0)", or one line saying why
// the ranks are not bound.
std::vector<std::string> describe_placement(const CorePlacement& placement, const CpuTopology& topology,
                                            int first_global_rank);

}  // namespace paisoar::launch
