// The values of torchrun's flags: --redirects/--tee (StdSpec), --nnodes
// ranges, --rdzv-endpoint, rank lists and key=value lists, and
// --nproc-per-node's auto|cpu|gpu from the node's devices (CUDA's rule for
// CUDA_VISIBLE_DEVICES). The examples are torchrun's own (its --help and
// Std.from_str's docstring).
#include "launch/flag_values.h"
#include "launch/node_devices.h"
#include "launch/std_spec.h"

#include <gtest/gtest.h>

namespace paisoar::launch {
namespace {

TEST(StdSpec, OneValueOrAMapByLocalRank) {
  EXPECT_EQ(parse_std_spec("0").streams_of(5), kStdNone);
  EXPECT_EQ(parse_std_spec("3").streams_of(5), kStdAll);
  const StdSpec map = parse_std_spec("0:3,1:0,2:1,3:2");  // torchrun's example
  EXPECT_EQ(map.streams_of(0), kStdAll);
  EXPECT_EQ(map.streams_of(1), kStdNone);
  EXPECT_EQ(map.streams_of(2), kStdOut);
  EXPECT_EQ(map.streams_of(3), kStdErr);
  EXPECT_EQ(map.streams_of(4), kStdNone) << "not named: none";
  EXPECT_TRUE(map.any());
  EXPECT_FALSE(parse_std_spec("0:0,1:0").any());
  for (const char* bad : {"", "4", "x", "0:4", "0:", ":1", "0:1,0:2", "0:1,", "-1"})
    EXPECT_THROW(parse_std_spec(bad), std::invalid_argument) << bad;
}

TEST(FlagValues, Nnodes) {
  EXPECT_EQ(parse_nnodes("4").min_nodes, 4);
  EXPECT_EQ(parse_nnodes("4").max_nodes, 4);
  EXPECT_EQ(parse_nnodes("1:4").max_nodes, 4);
  for (const char* bad : {"0", "2:1", "1:2:3", "", "a:b", " 2"})
    EXPECT_THROW(parse_nnodes(bad), std::invalid_argument) << bad;
}

TEST(FlagValues, Endpoints) {
  Endpoint e = parse_endpoint("node0:1234", 29400);
  EXPECT_EQ(e.host, "node0");
  EXPECT_EQ(e.port, 1234);
  EXPECT_EQ(parse_endpoint("node0", 29400).port, 29400);
  EXPECT_EQ(parse_endpoint("[fe80::1]:80", 1).host, "fe80::1");
  EXPECT_EQ(parse_endpoint("[::1]", 5).port, 5);
  EXPECT_EQ(parse_endpoint("::1", 5).host, "::1") << "an IPv6 address without brackets has no port";
  for (const char* bad : {"", ":80", "h:", "h:x", "h:65536", "[::1", "[::1]x"})
    EXPECT_THROW(parse_endpoint(bad, 1), std::invalid_argument) << bad;
}

TEST(FlagValues, RankAndKeyValueLists) {
  EXPECT_EQ(parse_rank_list("2,0"), (std::set<int>{0, 2}));
  for (const char* bad : {"", "0,", "a", "-1", "1,1"})
    EXPECT_THROW(parse_rank_list(bad), std::invalid_argument) << bad;
  const auto kv = parse_key_values("join_timeout=5,a=");
  EXPECT_EQ(kv.at("join_timeout"), "5");
  EXPECT_EQ(kv.at("a"), "");
  EXPECT_TRUE(parse_key_values("").empty());
  for (const char* bad : {"a", "=1", "a=1,a=2"})
    EXPECT_THROW(parse_key_values(bad), std::invalid_argument) << bad;
}

TEST(NodeDevices, VisibleDevicesCountAsCudaCountsThem) {
  EXPECT_EQ(gpus_in_visible_devices("0,1,2"), 3);
  EXPECT_EQ(gpus_in_visible_devices("GPU-8a1b,GPU-77c0"), 2);
  EXPECT_EQ(gpus_in_visible_devices(""), 0);
  EXPECT_EQ(gpus_in_visible_devices("0,-1,2"), 1) << "CUDA stops at -1";
  EXPECT_EQ(gpus_in_visible_devices("1,,2"), 1) << "and at an empty entry";
  EXPECT_EQ(gpus_in_visible_devices(" 3 "), 1);
}

TEST(NodeDevices, NprocPerNodeValues) {
  NodeDevices d;
  d.cpus = 16;
  d.gpus = 4;
  std::string why;
  EXPECT_EQ(resolve_nproc_per_node("3", d, &why), 3);
  EXPECT_EQ(resolve_nproc_per_node("cpu", d, &why), 16);
  EXPECT_EQ(resolve_nproc_per_node("gpu", d, &why), 4);
  EXPECT_EQ(resolve_nproc_per_node("auto", d, &why), 4);
  d.gpus = 0;
  EXPECT_EQ(resolve_nproc_per_node("auto", d, &why), 16);
  EXPECT_FALSE(resolve_nproc_per_node("gpu", d, &why).has_value());
  EXPECT_NE(why.find("no NVIDIA GPU"), std::string::npos) << why;
  for (const char* bad : {"0", "-2", "two", "", "xpu", "1.5"})
    EXPECT_FALSE(resolve_nproc_per_node(bad, d, &why).has_value()) << bad;
  EXPECT_GE(read_node_devices().cpus, 1);
}

}  // namespace
}  // namespace paisoar::launch
