// parse_launch_options(): torchrun's flags in both spellings, pass-through of
// the program's arguments, and the validation errors naming the flag.
#include "launch/launch_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace paisoar::launch {
namespace {

std::optional<LaunchOptions> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "launch");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return parse_launch_options(static_cast<int>(argv.size()), argv.data());
}

// The message of the LaunchUsageError that parsing `args` throws, or "".
std::string usage_error(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const LaunchUsageError& e) {
    return e.what();
  }
  return "";
}

TEST(LaunchOptions, DefaultsMatchTorchrun) {
  LaunchOptions o = *parse({"./train"});
  EXPECT_EQ(o.nproc_per_node, 1);
  EXPECT_EQ(o.nnodes, 1);
  EXPECT_EQ(o.node_rank, 0);
  EXPECT_EQ(o.master_addr, "127.0.0.1");
  EXPECT_EQ(o.master_port, 29500);
  EXPECT_EQ(o.max_restarts, 0);
  EXPECT_TRUE(o.log_dir.empty());
  EXPECT_TRUE(o.prefix_output);
  EXPECT_DOUBLE_EQ(o.grace_period_s, 5.0);
  EXPECT_DOUBLE_EQ(o.heartbeat_timeout_s, 0.0);
  EXPECT_DOUBLE_EQ(o.join_timeout_s, 60.0);
  EXPECT_FALSE(o.omp_num_threads.has_value());
  EXPECT_EQ(o.program, std::vector<std::string>{"./train"});
}

TEST(LaunchOptions, AcceptsUnderscoreDashAndEqualsSpellings) {
  LaunchOptions o = *parse({"--nproc-per-node=4", "--nnodes", "3", "--node-rank", "2",
                            "--master-addr", "10.0.0.1", "--master_port=1234", "--max-restarts",
                            "2", "--log-dir", "/tmp/x", "--no-prefix", "--grace-period", "0.5",
                            "--omp-num-threads", "3", "prog"});
  EXPECT_EQ(o.nproc_per_node, 4);
  EXPECT_EQ(o.nnodes, 3);
  EXPECT_EQ(o.node_rank, 2);
  EXPECT_EQ(o.master_addr, "10.0.0.1");
  EXPECT_EQ(o.master_port, 1234);
  EXPECT_EQ(o.max_restarts, 2);
  EXPECT_EQ(o.log_dir, "/tmp/x");
  EXPECT_FALSE(o.prefix_output);
  EXPECT_DOUBLE_EQ(o.grace_period_s, 0.5);
  EXPECT_EQ(o.omp_num_threads, 3);
  EXPECT_EQ(o.world_size(), 12);

  LaunchOptions u = *parse({"--nproc_per_node", "2", "--node_rank", "0", "--no_prefix",
                            "--omp_num_threads", "1", "prog"});
  EXPECT_EQ(u.nproc_per_node, 2);
  EXPECT_FALSE(u.prefix_output);
  EXPECT_EQ(u.omp_num_threads, 1);
}

TEST(LaunchOptions, ProgramArgumentsPassThroughUnchanged) {
  LaunchOptions o =
      *parse({"--nproc_per_node", "2", "./train", "--nproc_per_node", "9", "-x", "--", "--help"});
  EXPECT_EQ(o.nproc_per_node, 2);
  EXPECT_EQ(o.program, (std::vector<std::string>{"./train", "--nproc_per_node", "9", "-x", "--",
                                                 "--help"}));
  LaunchOptions dashed = *parse({"--", "-odd-name", "a"});
  EXPECT_EQ(dashed.program, (std::vector<std::string>{"-odd-name", "a"}));
}

TEST(LaunchOptions, HelpReturnsNothing) {
  EXPECT_FALSE(parse({"--help"}).has_value());
  EXPECT_NE(launch_help_text().find("--nproc_per_node"), std::string::npos);
}

TEST(LaunchOptions, StandaloneMeansOneNodeWithAFreePort) {
  LaunchOptions o = *parse({"--standalone", "prog"});
  EXPECT_EQ(o.nnodes, 1);
  EXPECT_EQ(o.master_port, 0);
  EXPECT_EQ(o.master_addr, "127.0.0.1");
}

TEST(LaunchOptions, ErrorsNameTheFlag) {
  EXPECT_NE(usage_error({"--nproc_per_node", "0", "p"}).find("--nproc_per_node"),
            std::string::npos);
  EXPECT_NE(usage_error({"--nproc_per_node", "two", "p"}).find("--nproc_per_node"),
            std::string::npos);
  EXPECT_NE(usage_error({"--nnodes", "0", "p"}).find("--nnodes"), std::string::npos);
  EXPECT_NE(usage_error({"--nnodes", "2", "--node_rank", "2", "p"}).find("--node_rank"),
            std::string::npos);
  EXPECT_NE(usage_error({"--node_rank", "-1", "p"}).find("--node_rank"), std::string::npos);
  EXPECT_NE(usage_error({"--master_port", "70000", "p"}).find("--master_port"),
            std::string::npos);
  EXPECT_NE(usage_error({"--nnodes", "2", "--master_port", "0", "p"}).find("--master_port"),
            std::string::npos);
  // The ranks' MASTER_PORT is --master_port + 1.
  EXPECT_NE(usage_error({"--master_port", "65535", "p"}).find("MASTER_PORT = --master_port + 1"),
            std::string::npos);
  EXPECT_EQ(parse({"--master_port", "65534", "p"})->master_port, 65534);
  EXPECT_NE(usage_error({"--max_restarts", "-1", "p"}).find("--max_restarts"),
            std::string::npos);
  EXPECT_NE(usage_error({"--grace_period", "-1", "p"}).find("--grace_period"),
            std::string::npos);
  EXPECT_NE(usage_error({"--omp_num_threads", "0", "p"}).find("--omp_num_threads"),
            std::string::npos);
  EXPECT_NE(usage_error({"--heartbeat_timeout", "-1", "p"}).find("--heartbeat_timeout"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(parse({"--heartbeat-timeout=2.5", "p"})->heartbeat_timeout_s, 2.5);
  EXPECT_NE(usage_error({"--join_timeout", "0", "p"}).find("--join_timeout must be more than 0"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(parse({"--join-timeout=0.5", "p"})->join_timeout_s, 0.5);
  EXPECT_NE(usage_error({"--nproc_per_node", "2"}).find("no program"), std::string::npos);
  EXPECT_NE(usage_error({"--bogus", "p"}).find("--bogus"), std::string::npos);
}

}  // namespace
}  // namespace paisoar::launch
