// The values of torchrun's flags: whole numbers and seconds within their
// ranges, --redirects/--tee (StdSpec), --nnodes ranges, --rdzv-endpoint,
// rank lists and key=value lists, and --nproc-per-node's auto|cpu|gpu from
// the node's devices (CUDA's rule for CUDA_VISIBLE_DEVICES). The examples
// are torchrun's own (its --help and Std.from_str's docstring).
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

// The message of the std::invalid_argument that `parse` throws, or "".
template <typename Parse>
std::string rejection(Parse parse) {
  try {
    parse();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(FlagValues, WholeNumbersWithinTheirRange) {
  EXPECT_EQ(parse_int_in("0", 0, 10), 0);
  EXPECT_EQ(parse_int_in("10", 0, 10), 10);
  for (const char* bad : {"11", "-1", "1e3", "2.5", "abc", "", " 1", "1 ", "0x1", "99999999999"})
    EXPECT_EQ(rejection([&] { parse_int_in(bad, 0, 10); }),
              std::string("must be a whole number from 0 to 10, got '") + bad + "'")
        << bad;
}

TEST(FlagValues, SecondsAreFiniteAndWithinTheirRange) {
  EXPECT_DOUBLE_EQ(parse_seconds("0", SecondsRange{}), 0.0);
  EXPECT_DOUBLE_EQ(parse_seconds("2.5", SecondsRange{}), 2.5);
  EXPECT_DOUBLE_EQ(parse_seconds("1e3", SecondsRange{}), 1000.0);
  EXPECT_DOUBLE_EQ(parse_seconds(".5", SecondsRange{}), 0.5);
  EXPECT_DOUBLE_EQ(parse_seconds("604800", SecondsRange{}), kMaxSeconds);
  // inf and 1e10 once overflowed the SIGKILL deadline of --grace_period.
  for (const char* bad : {"inf", "Infinity", "-inf", "nan", "1e10", "1e400", "604800.5", "-1", "0x10",
                          " 5", "5 ", "", "abc", "1e", "--1"}) {
    EXPECT_EQ(rejection([&] { parse_seconds(bad, SecondsRange{}); }),
              std::string("must be a finite number of seconds from 0 to 604800 (7 days), got '") + bad + "'")
        << bad;
  }
  const SecondsRange positive{0, 60, true, nullptr};
  EXPECT_DOUBLE_EQ(parse_seconds("0.001", positive), 0.001);
  EXPECT_EQ(rejection([&] { parse_seconds("0", positive); }),
            "must be a finite number of seconds more than 0 and at most 60, got '0'");
  const SecondsRange off{0, kMaxSeconds, false, "off"};
  EXPECT_EQ(rejection([&] { parse_seconds("-0.5", off); }),
            "must be a finite number of seconds from 0 (off) to 604800 (7 days), got '-0.5'");
}

TEST(FlagValues, Nnodes) {
  EXPECT_EQ(parse_nnodes("4").min_nodes, 4);
  EXPECT_EQ(parse_nnodes("4").max_nodes, 4);
  EXPECT_EQ(parse_nnodes("1:4").max_nodes, 4);
  EXPECT_EQ(parse_nnodes("65536").min_nodes, kMaxNodes);
  for (const char* bad : {"0", "2:1", "1:2:3", "", "a:b", " 2", "65537", "99999999999"})
    EXPECT_THROW(parse_nnodes(bad), std::invalid_argument) << bad;
  EXPECT_EQ(rejection([] { parse_nnodes("99999999999"); }),
            "must be a whole number from 1 to 65536, got '99999999999'");
}

TEST(FlagValues, Endpoints) {
  Endpoint e = parse_endpoint("node0:1234", 29400);
  EXPECT_EQ(e.host, "node0");
  EXPECT_EQ(e.port, 1234);
  EXPECT_EQ(parse_endpoint("node0", 29400).port, 29400);
  EXPECT_EQ(parse_endpoint("[fe80::1]:80", 1).host, "fe80::1");
  EXPECT_EQ(parse_endpoint("[::1]", 5).port, 5);
  EXPECT_EQ(parse_endpoint("::1", 5).host, "::1") << "an IPv6 address without brackets has no port";
  for (const char* bad : {"", ":80", "h:", "h:x", "h:65536", "[::1", "[::1]x", "h:99999999999"})
    EXPECT_THROW(parse_endpoint(bad, 1), std::invalid_argument) << bad;
  EXPECT_EQ(rejection([] { parse_endpoint("h:70000", 1); }),
            "'h:70000': its port must be a whole number from 0 to 65535, got '70000'");
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
  for (const char* bad : {"0", "-2", "two", "", "xpu", "1.5", "4097", "99999999999", "1e3"}) {
    EXPECT_FALSE(resolve_nproc_per_node(bad, d, &why).has_value()) << bad;
    EXPECT_NE(why.find(std::string("must be a whole number from 1 to 4096, or auto, cpu or gpu, got '") +
                       bad + "'"),
              std::string::npos)
        << why;
  }
  EXPECT_EQ(resolve_nproc_per_node("4096", d, &why), kMaxRanksPerNode);
  d.cpus = 8192;
  EXPECT_FALSE(resolve_nproc_per_node("cpu", d, &why).has_value());
  EXPECT_EQ(why, "cpu gives 8192 ranks, more than the 4096 a node may run; give a number");
  EXPECT_GE(read_node_devices().cpus, 1);
}

}  // namespace
}  // namespace paisoar::launch
