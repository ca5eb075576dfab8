// Unit tests of the placement of ranks on cores (core_placement.h) over
// machines described by hand, and of the topology reader over a sysfs and
// procfs tree written in a scratch directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "launch/core_placement.h"
#include "launch/cpu_topology.h"

namespace paisoar::launch {
namespace {

// `packages` x `numa_per_package` NUMA nodes of `cores` cores each with
// `smt` hardware threads; CPU ids as Linux numbers them on x86 (first every
// core's first thread, then the siblings).
CpuTopology machine(int numa_nodes, int cores_per_node, int smt = 1) {
  CpuTopology t;
  const int cores = numa_nodes * cores_per_node;
  for (int thread = 0; thread < smt; ++thread) {
    for (int core = 0; core < cores; ++core) {
      t.cpus.push_back(LogicalCpu{thread * cores + core, core, 0, core / cores_per_node});
    }
  }
  return t;
}

std::vector<std::vector<int>> ids(std::initializer_list<std::vector<int>> l) { return l; }

TEST(CorePlacement, OneCoreEachOnTwoCores) {
  const CorePlacement p = place_ranks_on_cores(machine(1, 2), 2, BindTo::kCore);
  ASSERT_TRUE(p.bound());
  EXPECT_EQ(p.unit, "core");
  EXPECT_EQ(p.cpus_of_rank, ids({{0}, {1}}));
}

TEST(CorePlacement, EachRankGetsItsShareOfWholeCoresWithTheirHardwareThreads) {
  // 8 cores with 2 threads each (CPU k and k+8 are siblings), 2 ranks: 4 cores each.
  const CorePlacement p = place_ranks_on_cores(machine(1, 8, 2), 2, BindTo::kCore);
  ASSERT_TRUE(p.bound());
  EXPECT_EQ(p.units_per_rank, 4);
  EXPECT_EQ(p.cpus_of_rank, ids({{0, 1, 2, 3, 8, 9, 10, 11}, {4, 5, 6, 7, 12, 13, 14, 15}}));
}

TEST(CorePlacement, RanksAreSpreadAcrossNumaNodes) {
  // 2 NUMA nodes of 4 cores: ranks alternate between them.
  const CorePlacement p = place_ranks_on_cores(machine(2, 4), 4, BindTo::kCore);
  ASSERT_TRUE(p.bound());
  EXPECT_EQ(p.cpus_of_rank, ids({{0, 1}, {4, 5}, {2, 3}, {6, 7}}));
  // Two ranks: one per node, each with the whole node.
  EXPECT_EQ(place_ranks_on_cores(machine(2, 4), 2, BindTo::kCore).cpus_of_rank, ids({{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(CorePlacement, ARankTakesItsCoresFromOneNodeWhereOneHasEnough) {
  // 3 ranks on 2 nodes of 3 cores: 2 cores each; rank 2 would prefer node 0,
  // which has one core left, so it takes node 1's last two... which has one
  // too: then it spans both.
  const CorePlacement p = place_ranks_on_cores(machine(2, 3), 3, BindTo::kCore);
  ASSERT_TRUE(p.bound());
  EXPECT_EQ(p.cpus_of_rank, ids({{0, 1}, {3, 4}, {2, 5}}));
  // Nodes of unequal size: 2 ranks of 3 cores on nodes of 4 and 2 cores.
  CpuTopology t = machine(1, 4);
  t.cpus.push_back(LogicalCpu{4, 4, 0, 1});
  t.cpus.push_back(LogicalCpu{5, 5, 0, 1});
  const CorePlacement q = place_ranks_on_cores(t, 2, BindTo::kCore);
  EXPECT_EQ(q.cpus_of_rank, ids({{0, 1, 2}, {3, 4, 5}}));
}

TEST(CorePlacement, LeftoverCoresStayUnbound) {
  const CorePlacement p = place_ranks_on_cores(machine(1, 5), 2, BindTo::kCore);
  EXPECT_EQ(p.cpus_of_rank, ids({{0, 1}, {2, 3}}));
}

TEST(CorePlacement, MoreRanksThanCoresTakeHardwareThreads) {
  // 2 cores with 2 threads each (CPUs 0,2 on core 0; 1,3 on core 1), 4 ranks.
  const CorePlacement p = place_ranks_on_cores(machine(1, 2, 2), 4, BindTo::kCore);
  ASSERT_TRUE(p.bound());
  EXPECT_EQ(p.unit, "hardware thread");
  EXPECT_EQ(p.cpus_of_rank, ids({{0}, {2}, {1}, {3}}));
}

TEST(CorePlacement, MoreRanksThanCpusAreLeftUnbound) {
  const CorePlacement p = place_ranks_on_cores(machine(1, 2), 4, BindTo::kCore);
  EXPECT_FALSE(p.bound());
  EXPECT_EQ(p.why_unbound, "4 ranks on 2 CPUs");
  EXPECT_EQ(describe_placement(p, machine(1, 2), 0),
            std::vector<std::string>{"ranks not bound to cores: 4 ranks on 2 CPUs"});
}

TEST(CorePlacement, TheFlagTurnsItOff) {
  const CorePlacement p = place_ranks_on_cores(machine(1, 8), 2, BindTo::kNone);
  EXPECT_FALSE(p.bound());
  EXPECT_EQ(p.why_unbound, "--bind_to none");
}

TEST(CorePlacement, AutoBindsProgramsRunDirectlyAndLeavesPythonOnesAsTorchrun) {
  EXPECT_EQ(bind_for_program(BindTo::kAuto, false), BindTo::kCore);
  EXPECT_EQ(bind_for_program(BindTo::kAuto, true), BindTo::kNone);
  EXPECT_EQ(bind_for_program(BindTo::kCore, true), BindTo::kCore);
  EXPECT_EQ(bind_for_program(BindTo::kNone, false), BindTo::kNone);
}

TEST(CorePlacement, AnExistingMaskIsRespected) {
  // The launcher may run on CPUs 2, 3, 6 and 7 only (taskset, a cpuset).
  CpuTopology t;
  for (int id : {2, 3, 6, 7}) t.cpus.push_back(LogicalCpu{id, id, 0, id / 4});
  const CorePlacement p = place_ranks_on_cores(t, 2, BindTo::kCore);
  EXPECT_EQ(p.cpus_of_rank, ids({{2, 3}, {6, 7}}));
}

TEST(CorePlacement, TheCgroupQuotaLimitsTheCoresUsed) {
  // 8 cores on 2 nodes but a quota of 2 CPUs: one core each, one per node.
  CpuTopology t = machine(2, 4);
  t.quota_cpus = 2;
  const CorePlacement p = place_ranks_on_cores(t, 2, BindTo::kCore);
  EXPECT_EQ(p.cpus_of_rank, ids({{0}, {4}}));
  // Above the quota: not bound, and the reason says so.
  const CorePlacement q = place_ranks_on_cores(t, 3, BindTo::kCore);
  EXPECT_FALSE(q.bound());
  EXPECT_EQ(q.why_unbound, "3 ranks on 2 CPUs (the cgroup's CPU quota)");
}

TEST(CorePlacement, DescribeNamesEachRanksCpusCoresAndNode) {
  const CpuTopology t = machine(2, 2, 2);
  const CorePlacement p = place_ranks_on_cores(t, 2, BindTo::kCore);
  EXPECT_EQ(describe_placement(p, t, 4),
            (std::vector<std::string>{"rank 4 (local 0): CPUs 0-1,4-5 (2 cores, NUMA node 0)",
                                      "rank 5 (local 1): CPUs 2-3,6-7 (2 cores, NUMA node 1)"}));
}

TEST(CpuList, ParsesAndPrintsTheKernelsFormat) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list(""), std::vector<int>{});
  EXPECT_THROW(parse_cpu_list("3-1"), std::invalid_argument);
  EXPECT_THROW(parse_cpu_list("a"), std::invalid_argument);
  EXPECT_EQ(cpu_list_text({5, 0, 1, 2}), "0-2,5");
}

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("paisoar_topology_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void write(const std::string& path, const std::string& text) {
    const std::filesystem::path p = root_ / path;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text << "\n";
  }
  void cpu(int id, int core, int package) {
    const std::string dir = "sys/devices/system/cpu/cpu" + std::to_string(id) + "/topology/";
    write(dir + "core_id", std::to_string(core));
    write(dir + "physical_package_id", std::to_string(package));
  }
  std::string sys() const { return (root_ / "sys").string(); }
  std::string proc() const { return (root_ / "proc").string(); }
  std::filesystem::path root_;
};

TEST_F(FakeSysfs, ReadsCoresPackagesNumaNodesAndTheTightestQuota) {
  // Two packages, one NUMA node each, two cores with two threads each.
  for (int id = 0; id < 8; ++id) cpu(id, id % 2, (id / 2) % 2);
  write("sys/devices/system/node/node0/cpulist", "0-1,4-5");
  write("sys/devices/system/node/node1/cpulist", "2-3,6-7");
  write("sys/devices/system/node/possible", "0-1");
  write("proc/self/cgroup", "0::/jobs/train");
  write("sys/fs/cgroup/cpu.max", "max 100000");
  write("sys/fs/cgroup/jobs/cpu.max", "600000 100000");
  write("sys/fs/cgroup/jobs/train/cpu.max", "250000 100000");
  const CpuTopology t = read_cpu_topology(sys(), proc(), {0, 1, 2, 3, 4, 5, 6, 7});
  ASSERT_EQ(t.cpus.size(), 8u);
  EXPECT_EQ(t.cpus[2].package, 1);
  EXPECT_EQ(t.cpus[2].numa, 1);
  EXPECT_EQ(t.cpus[5].core, 1);
  EXPECT_EQ(t.cpus[5].numa, 0);
  EXPECT_EQ(t.quota_cpus, 3);  // 2.5 CPUs, rounded up
  // Two ranks: on each package one core with its two threads.
  EXPECT_EQ(place_ranks_on_cores(t, 2, BindTo::kCore).cpus_of_rank, ids({{0, 4}, {2, 6}}));
}

TEST_F(FakeSysfs, CpusWithoutTopologyFilesAreCoresOfTheirOwn) {
  write("proc/self/cgroup", "0::/");
  write("sys/fs/cgroup/cpu.max", "max 100000");
  const CpuTopology t = read_cpu_topology(sys(), proc(), {0, 1, 2});
  EXPECT_EQ(t.quota_cpus, 0);
  EXPECT_EQ(place_ranks_on_cores(t, 3, BindTo::kCore).cpus_of_rank, ids({{0}, {1}, {2}}));
}

}  // namespace
}  // namespace paisoar::launch
