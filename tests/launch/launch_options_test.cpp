// parse_launch_options(): torchrun 2.x's flags in both spellings (and the
// values torchrun takes: --nnodes N:N, --nproc-per-node auto|cpu|gpu,
// --rdzv-endpoint, --redirects maps, ...), pass-through of the program's
// arguments, and the validation errors naming the flag.
#include "launch/launch_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace paisoar::launch {
namespace {

// A node with 8 CPUs and 2 GPUs, unless a test says otherwise.
NodeDevices eight_cpus_two_gpus() {
  NodeDevices d;
  d.cpus = 8;
  d.gpus = 2;
  return d;
}

std::optional<LaunchOptions> parse(std::vector<std::string> args,
                                   const NodeDevices& devices = eight_cpus_two_gpus()) {
  args.insert(args.begin(), "launch");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return parse_launch_options(static_cast<int>(argv.size()), argv.data(), devices);
}

// The message of the LaunchUsageError that parsing `args` throws, or "".
std::string usage_error(std::vector<std::string> args,
                        const NodeDevices& devices = eight_cpus_two_gpus()) {
  try {
    parse(std::move(args), devices);
  } catch (const LaunchUsageError& e) {
    return e.what();
  }
  return "";
}

bool mentions(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
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
  EXPECT_TRUE(o.run_id.empty());
  EXPECT_EQ(o.role, "default");
  EXPECT_FALSE(o.wants_log_files());
  EXPECT_TRUE(o.local_ranks_filter.empty());
  EXPECT_EQ(o.python_mode, PythonMode::kBySuffix);
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

TEST(LaunchOptions, NnodesTakesTorchrunsRangeWhenItIsOneNumber) {
  EXPECT_EQ(parse({"--nnodes", "2:2", "--node-rank", "1", "p"})->nnodes, 2);
  EXPECT_EQ(parse({"--nnodes=3", "p"})->nnodes, 3);
  const std::string elastic = usage_error({"--nnodes", "1:4", "p"});
  EXPECT_TRUE(mentions(elastic, "--nnodes 1:4: elastic node ranges are not supported")) << elastic;
  EXPECT_TRUE(mentions(elastic, "Give --nnodes N")) << elastic;
  EXPECT_TRUE(mentions(usage_error({"--nnodes", "4:1", "p"}), "--nnodes")) << "MIN above MAX";
  EXPECT_TRUE(mentions(usage_error({"--nnodes", "1:2:3", "p"}), "--nnodes"));
  EXPECT_TRUE(mentions(usage_error({"--nnodes", "x", "p"}), "--nnodes"));
}

TEST(LaunchOptions, NprocPerNodeCountsCpusOrGpus) {
  EXPECT_EQ(parse({"--nproc-per-node", "cpu", "p"})->nproc_per_node, 8);
  EXPECT_EQ(parse({"--nproc-per-node", "gpu", "p"})->nproc_per_node, 2);
  EXPECT_EQ(parse({"--nproc_per_node=auto", "p"})->nproc_per_node, 2) << "the GPUs when there are";
  NodeDevices no_gpu;
  no_gpu.cpus = 6;
  EXPECT_EQ(parse({"--nproc-per-node", "auto", "p"}, no_gpu)->nproc_per_node, 6) << "else the CPUs";
  EXPECT_TRUE(mentions(usage_error({"--nproc-per-node", "gpu", "p"}, no_gpu), "found no NVIDIA GPU"));
  EXPECT_TRUE(mentions(usage_error({"--nproc-per-node", "xpu", "p"}),
                       "--nproc_per_node must be a whole number from 1 to 4096, or auto, cpu or gpu, "
                       "got 'xpu' (Intel XPUs are not counted"));
}

TEST(LaunchOptions, RendezvousFlagsNameTheLaunchersStore) {
  LaunchOptions o = *parse({"--rdzv-backend", "c10d", "--rdzv-endpoint", "10.0.0.5:29400",
                            "--rdzv-id", "job42", "--nnodes", "2", "--node-rank", "1", "p"});
  EXPECT_EQ(o.master_addr, "10.0.0.5");
  EXPECT_EQ(o.master_port, 29400);
  EXPECT_EQ(o.run_id, "job42");
  EXPECT_EQ(parse({"--rdzv_endpoint", "node0", "p"})->master_port, 29400) << "torchrun's default";
  LaunchOptions v6 = *parse({"--rdzv_endpoint=[::1]:1234", "p"});
  EXPECT_EQ(v6.master_addr, "::1");
  EXPECT_EQ(v6.master_port, 1234);
  EXPECT_EQ(parse({"--master-addr", "[::1]", "p"})->master_addr, "::1") << "torchrun's IPv6 form";
  // The same store twice is fine; two different ones are not.
  EXPECT_EQ(parse({"--rdzv-endpoint", "h:7", "--master-addr", "h", "p"})->master_port, 7);
  EXPECT_TRUE(mentions(usage_error({"--rdzv-endpoint", "h:7", "--master-port", "8", "p"}),
                       "name different stores"));
  EXPECT_TRUE(mentions(usage_error({"--rdzv-backend", "etcd", "p"}),
                       "--rdzv-backend etcd is not supported"));
  EXPECT_TRUE(mentions(usage_error({"--rdzv-backend", "c10d", "--rdzv-endpoint", "h:7", "--nnodes",
                                    "2", "p"}),
                       "needs --node-rank"));
  EXPECT_TRUE(mentions(usage_error({"--rdzv-endpoint", "h:99999", "p"}), "--rdzv-endpoint"));
  EXPECT_DOUBLE_EQ(parse({"--rdzv-conf", "join_timeout=120", "p"})->join_timeout_s, 120.0);
  EXPECT_TRUE(mentions(usage_error({"--rdzv-conf", "read_timeout=5", "p"}),
                       "--rdzv-conf read_timeout is not understood"));
  EXPECT_TRUE(mentions(usage_error({"--rdzv-id", "", "p"}), "--rdzv-id"));
}

TEST(LaunchOptions, StandaloneIgnoresTheRendezvousFlags) {
  LaunchOptions o = *parse({"--standalone", "--rdzv-endpoint", "10.0.0.5:1", "--rdzv-backend",
                            "c10d", "--nnodes", "1:1", "p"});
  EXPECT_EQ(o.master_addr, "127.0.0.1");
  EXPECT_EQ(o.master_port, 0);
  EXPECT_TRUE(mentions(usage_error({"--standalone", "--nnodes", "2", "p"}), "--standalone"));
}

TEST(LaunchOptions, RedirectsTeeAndTheFilterChooseWhatReachesTheConsole) {
  LaunchOptions o = *parse({"--nproc-per-node", "3", "-r", "0:3,1:2", "--tee", "1",
                            "--local-ranks-filter", "0,1", "p"});
  EXPECT_TRUE(o.wants_log_files());
  EXPECT_FALSE(o.on_console(0, kStdOut));  // redirected
  EXPECT_FALSE(o.on_console(0, kStdErr));
  EXPECT_TRUE(o.on_console(1, kStdOut));
  EXPECT_FALSE(o.on_console(1, kStdErr));
  EXPECT_FALSE(o.on_console(2, kStdOut));  // filtered out
  EXPECT_EQ(o.tee.streams_of(2), kStdOut);
  EXPECT_TRUE(parse({"--redirects=3", "p"})->wants_log_files());
  EXPECT_TRUE(parse({"-t", "2", "p"})->wants_log_files());
  EXPECT_TRUE(mentions(usage_error({"--redirects", "4", "p"}), "--redirects '4'"));
  EXPECT_TRUE(mentions(usage_error({"--nproc-per-node", "2", "--tee", "0:1,2:1", "p"}),
                       "--tee names local rank 2, but --nproc-per-node is 2"));
  EXPECT_TRUE(mentions(usage_error({"--local-ranks-filter", "0,x", "p"}),
                       "--local-ranks-filter must be a comma-separated list"));
  EXPECT_TRUE(mentions(usage_error({"--local-ranks-filter", "1", "p"}),
                       "--local-ranks-filter names local rank 1"));
}

TEST(LaunchOptions, PythonFlagsAsTorchrun) {
  EXPECT_EQ(parse({"--no-python", "x.py"})->python_mode, PythonMode::kNever);
  EXPECT_EQ(parse({"-m", "pkg.train", "--lr", "1"})->python_mode, PythonMode::kModule);
  EXPECT_EQ(parse({"--module", "pkg.train"})->program, std::vector<std::string>{"pkg.train"});
  EXPECT_EQ(parse({"--run-path", "/abs/train"})->python_mode, PythonMode::kScript);
  EXPECT_EQ(parse({"--run_path", "--no_python", "/abs/train"})->python_mode, PythonMode::kScript)
      << "torchrun: --run-path takes precedence over --no-python";
  EXPECT_TRUE(mentions(usage_error({"-m", "--no-python", "pkg"}), "--module and --no-python"));
  EXPECT_TRUE(mentions(usage_error({"-m", "--run-path", "pkg"}), "--module and --run-path"));
}

TEST(LaunchOptions, OtherTorchrunFlags) {
  LaunchOptions o = *parse({"--role", "trainer", "--monitor-interval", "5", "--start-method",
                            "fork", "--shutdown-timeout", "7", "p"});
  EXPECT_EQ(o.role, "trainer");
  EXPECT_DOUBLE_EQ(o.grace_period_s, 7.0) << "--shutdown-timeout is the grace period";
  EXPECT_EQ(parse({"--monitor_interval=0.5", "--start_method", "spawn", "p"})->program.size(), 1u);
  EXPECT_TRUE(mentions(usage_error({"--monitor-interval", "0", "p"}), "--monitor_interval"));
  EXPECT_TRUE(mentions(usage_error({"--start-method", "thread", "p"}), "--start-method"));
  // A torchrun flag paisoar does not take is named as such.
  EXPECT_TRUE(mentions(usage_error({"--numa_binding=node", "p"}),
                       "torchrun's --numa-binding is not supported by paisoar launch"));
  EXPECT_TRUE(mentions(usage_error({"--local-addr", "x", "p"}), "torchrun's --local-addr"));
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
  EXPECT_NE(usage_error({"--join_timeout", "0", "p"})
                .find("--join_timeout must be a finite number of seconds more than 0"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(parse({"--join-timeout=0.5", "p"})->join_timeout_s, 0.5);
  EXPECT_NE(usage_error({"--nproc_per_node", "2"}).find("no program"), std::string::npos);
  EXPECT_NE(usage_error({"--bogus", "p"}).find("--bogus"), std::string::npos);
}

}  // namespace
}  // namespace paisoar::launch
