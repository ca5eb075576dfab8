// The planner's cost cache keeps what it was given, and a file that is not
// one (not JSON, another format, a negative or non-numeric measurement) is
// ignored with a warning naming it, never trusted, and written anew. Where
// the planner measures: the node's CPUs from the launcher.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "paisoar/plan/planner.h"
#include "src/plan/cost_cache.h"
#include "tests/support/temp_dir.h"

namespace paisoar {
namespace {

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(CostCache, KeepsLayersLinesAndNumbersBetweenRuns) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/sub/costs.json";
  std::ostringstream warn;
  {
    plan::CostCache cache(path, warn);
    pipeline::LayerCost c;
    c.name = "fc1";
    c.time_s = 3e-3;
    c.forward_s = 1e-3;
    c.parameter_bytes = 4096;
    c.activation_bytes = 512;
    c.output_bytes = 128;
    cache.set_layers("k", {c});
    cache.set_comm("g", {{plan::Collective::Allreduce, {1e-5, 2e-10}}, {plan::Collective::Send, {2e-6, 1e-10}}});
    cache.set_numbers("n", {1.5, 7});
    cache.save();
  }
  plan::CostCache again(path, warn);
  EXPECT_EQ(warn.str(), "");
  const auto layers = again.layers("k");
  ASSERT_TRUE(layers);
  EXPECT_EQ((*layers)[0].name, "fc1");
  EXPECT_DOUBLE_EQ((*layers)[0].forward_s, 1e-3);
  EXPECT_EQ((*layers)[0].output_bytes, 128);
  ASSERT_TRUE(again.comm("g"));
  EXPECT_EQ(again.comm("g")->size(), 2u);
  EXPECT_EQ(*again.numbers("n"), (std::vector<double>{1.5, 7}));
  EXPECT_FALSE(again.layers("other"));
}

TEST(CostCache, AFileThatIsNotOneIsIgnoredWithAWarningAndRewritten) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/costs.json";
  for (const std::string& text :
       {std::string("\x01\x02 not json"), std::string("{\"format\": \"someone-else/3\"}"),
        std::string("{\"format\":\"paisoar-plan-costs/1\",\"layers\":{\"k\":[{\"time_s\":-1,\"forward_s\":0,"
                    "\"parameter_bytes\":0,\"activation_bytes\":0,\"output_bytes\":0}]},\"comm\":{},\"numbers\":{}}"),
        std::string("{\"format\":\"paisoar-plan-costs/1\",\"layers\":{},\"comm\":{\"g\":{\"allreduce\":[\"x\",1]}},"
                    "\"numbers\":{}}")}) {
    write(path, text);
    std::ostringstream warn;
    plan::CostCache cache(path, warn);
    EXPECT_NE(warn.str().find("ignoring the cost cache " + path), std::string::npos) << text;
    EXPECT_NE(warn.str().find("measuring again"), std::string::npos);
    EXPECT_FALSE(cache.layers("k"));
    EXPECT_FALSE(cache.comm("g"));
    cache.save();
    std::ostringstream quiet;
    plan::CostCache rewritten(path, quiet);
    EXPECT_EQ(quiet.str(), "") << "the file is a valid cache again";
  }
}

}  // namespace
}  // namespace paisoar

namespace paisoar {
namespace {

// Where the planner measures inside a rank the launcher bound to its own
// cores: the node's CPUs, from PAISOAR_NODE_CPUS; nothing when it is absent
// or not a CPU list (then the planning thread's own mask).
// --cache (bench plan, paisoar plan, paisoar.plan's cache=): "" the default
// the environment gives, "-" none, else the path.
TEST(PlanSite, TheCacheFlagNamesAPathTheDefaultOrNone) {
  const comm::EnvMap env{{"PAISOAR_PLAN_CACHE", "/tmp/costs.json"}};
  EXPECT_EQ(plan::cache_path_from_flag("", env), "/tmp/costs.json");
  EXPECT_EQ(plan::cache_path_from_flag("-", env), "");
  EXPECT_EQ(plan::cache_path_from_flag("mine.json", env), "mine.json");
}

TEST(PlanSite, NodeCpusComeFromTheLaunchersVariable) {
  EXPECT_EQ(plan::node_cpus_from_env({{"PAISOAR_NODE_CPUS", "0-3,8"}}), (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_TRUE(plan::node_cpus_from_env({}).empty());
  EXPECT_TRUE(plan::node_cpus_from_env({{"PAISOAR_NODE_CPUS", "seven"}}).empty());
}

}  // namespace
}  // namespace paisoar
