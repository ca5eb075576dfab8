// Process tests of the command line: bad launcher flags exit 2 naming the
// flag; the dispatcher's help, version, and hand-off to paisoar-core.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "launcher_runner.h"

namespace paisoar::launch::testing {
namespace {

void expect_usage_error(const std::vector<std::string>& args, const std::string& names) {
  RunResult r = run_paisoar(args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(names), std::string::npos) << "stderr: " << r.err;
  EXPECT_NE(r.err.find("paisoar launch --help"), std::string::npos) << r.err;
}

TEST(LaunchCli, BadFlagsExit2NamingTheFlag) {
  expect_usage_error({"launch", "--nproc_per_node", "0", LAUNCH_PROBE}, "--nproc_per_node");
  expect_usage_error({"launch", "--nnodes", "2", "--node_rank", "2", LAUNCH_PROBE},
                     "--node_rank");
  expect_usage_error({"launch", "--nproc_per_node", "2"}, "no program");
  expect_usage_error({"launch", "--nnodes", "2", "--master_port", "0", LAUNCH_PROBE},
                     "--master_port");
  expect_usage_error({"launch", "--nproc_per_node", "x", LAUNCH_PROBE}, "--nproc_per_node");
  expect_usage_error({"launch", "--bogus", LAUNCH_PROBE}, "--bogus");
}

TEST(LaunchCli, TorchrunFlagsPaisoarDoesNotTakeAreNamed) {
  expect_usage_error({"launch", "--nnodes", "1:4", LAUNCH_PROBE},
                     "elastic node ranges are not supported");
  expect_usage_error({"launch", "--numa-binding", "node", LAUNCH_PROBE},
                     "torchrun's --numa-binding is not supported by paisoar launch");
  expect_usage_error({"launch", "--rdzv-backend", "etcd-v2", LAUNCH_PROBE},
                     "--rdzv-backend etcd-v2 is not supported");
}

// The command each rank runs, seen through /bin/echo standing in for Python.
TEST(LaunchCli, PythonProgramsRunAsUnderTorchrun) {
  RunResult module = run_paisoar({"launch", "--master-port", "0", "-m", "pkg.train", "--lr", "1"},
                                 {"PAISOAR_PYTHON=/bin/echo"});
  EXPECT_EQ(module.exit_code, 0) << module.err;
  EXPECT_EQ(module.out, "[rank0]: -u -m pkg.train --lr 1\n");
  RunResult script = run_paisoar({"launch", "--master-port", "0", "train.py", "x"},
                                 {"PAISOAR_PYTHON", "PYTHON_EXEC=/bin/echo"});
  EXPECT_EQ(script.out, "[rank0]: -u train.py x\n") << "torchrun's PYTHON_EXEC " << script.err;
  RunResult run_path = run_paisoar({"launch", "--master-port", "0", "--run-path", "/abs/train"},
                                   {"PAISOAR_PYTHON=/bin/echo"});
  EXPECT_EQ(run_path.out, "[rank0]: -u /abs/train\n") << run_path.err;
  // --no-python: a program named *.py runs itself.
  namespace fs = std::filesystem;
  const fs::path dir = make_temp_dir();
  {
    std::ofstream tool(dir / "tool.py");
    tool << "#!/bin/sh\necho direct \"$@\"\n";
  }
  fs::permissions(dir / "tool.py", fs::perms::owner_all);
  RunResult direct = run_paisoar({"launch", "--master-port", "0", "--no-python",
                                  (dir / "tool.py").string(), "a"},
                                 {"PAISOAR_PYTHON=/bin/echo"});
  EXPECT_EQ(direct.exit_code, 0) << direct.err;
  EXPECT_EQ(direct.out, "[rank0]: direct a\n");
  fs::remove_all(dir);
}

TEST(LaunchCli, LaunchHelp) {
  RunResult r = run_paisoar({"launch", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--nproc_per_node"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--max_restarts"), std::string::npos) << r.out;
  for (const char* flag : {"--rdzv-endpoint", "--redirects", "--tee", "--local-ranks-filter",
                           "--no-python", "--module", "--run-path", "--monitor-interval"})
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag << " in " << r.out;
  RunResult via_help = run_paisoar({"help", "launch"});
  EXPECT_EQ(via_help.out, r.out);
}

TEST(PaisoarCli, HelpListsSubcommands) {
  RunResult r = run_paisoar({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* command : {"launch", "demo", "bench"})
    EXPECT_NE(r.out.find(std::string("  ") + command + " "), std::string::npos) << r.out;
  RunResult bare = run_paisoar({});
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.err.find("launch"), std::string::npos) << bare.err;
}

TEST(PaisoarCli, Version) {
  RunResult r = run_paisoar({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, std::string("paisoar ") + PAISOAR_VERSION + "\n");
}

TEST(PaisoarCli, OtherSubcommandsRunTheSiblingCore) {
  // A copy of paisoar next to a fake paisoar-core that prints its argv.
  namespace fs = std::filesystem;
  const fs::path dir = make_temp_dir();
  fs::copy_file(PAISOAR_BIN, dir / "paisoar");
  {
    std::ofstream core(dir / "paisoar-core");
    core << "#!/bin/sh\necho \"core:$0\"\nfor a in \"$@\"; do echo \"arg:$a\"; done\n";
  }
  fs::permissions(dir / "paisoar-core", fs::perms::owner_all);
  LauncherRun run({"demo", "--steps", "3", "a b"}, {"PAISOAR_CORE"}, (dir / "paisoar").string());
  RunResult r = run.finish();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "core:" + (dir / "paisoar-core").string() +
                       "\narg:demo\narg:--steps\narg:3\narg:a b\n");
  fs::remove_all(dir);
}

TEST(PaisoarCli, CoreOverrideAndMissingCore) {
  RunResult echo = run_paisoar({"bench", "--x", "y"}, {"PAISOAR_CORE=/bin/echo"});
  EXPECT_EQ(echo.exit_code, 0) << echo.err;
  EXPECT_EQ(echo.out, "bench --x y\n");
  RunResult missing = run_paisoar({"demo"}, {"PAISOAR_CORE=/nonexistent/paisoar-core"});
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_NE(missing.err.find("/nonexistent/paisoar-core"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("'demo'"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace paisoar::launch::testing
