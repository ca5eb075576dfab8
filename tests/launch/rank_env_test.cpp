// build_rank_env() and rank_command(): the environment and command line each
// rank starts with, checked against torchrun 2.14's definitions (its
// local_elastic_agent.py sets the variables, run.py builds the command); the
// Python interpreter chosen, and the message when it cannot import torch.
#include "launch/python_check.h"
#include "launch/rank_command.h"
#include "launch/rank_env.h"

#include <gtest/gtest.h>

#include <map>

namespace paisoar::launch {
namespace {

std::map<std::string, std::string> as_map(const std::vector<std::string>& env) {
  std::map<std::string, std::string> m;
  for (const std::string& e : env) {
    EXPECT_EQ(m.count(e.substr(0, e.find('='))), 0u) << "duplicate entry " << e;
    m[e.substr(0, e.find('='))] = e.substr(e.find('=') + 1);
  }
  return m;
}

LaunchOptions two_nodes_of_two() {
  LaunchOptions o;
  o.nproc_per_node = 2;
  o.nnodes = 2;
  o.node_rank = 1;
  o.master_addr = "10.0.0.7";
  o.master_port = 4321;
  o.max_restarts = 3;
  o.program = {"prog"};
  return o;
}

TEST(RankEnv, SetsTorchrunVariables) {
  RankEnvContext ctx;
  ctx.local_rank = 1;
  ctx.restart_count = 2;
  ctx.run_id = "abc";
  ctx.cpu_count = 8;
  ctx.job_token = "t0ken";
  auto env = as_map(build_rank_env(two_nodes_of_two(), ctx,
                                   {"HOME=/root", "RANK=99", "PAISOAR_JOB_TOKEN=old"}));
  EXPECT_EQ(env["HOME"], "/root");
  EXPECT_EQ(env["RANK"], "3");  // node_rank * nproc_per_node + local_rank
  EXPECT_EQ(env["LOCAL_RANK"], "1");
  EXPECT_EQ(env["WORLD_SIZE"], "4");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
  EXPECT_EQ(env["GROUP_RANK"], "1");
  EXPECT_EQ(env["ROLE_RANK"], "3");
  EXPECT_EQ(env["ROLE_WORLD_SIZE"], "4");
  EXPECT_EQ(env["MASTER_ADDR"], "10.0.0.7");
  EXPECT_EQ(env["MASTER_PORT"], "4322");  // for a store the rank hosts itself
  EXPECT_EQ(env["PAISOAR_STORE_ADDR"], "10.0.0.7");  // the launcher's store
  EXPECT_EQ(env["PAISOAR_STORE_PORT"], "4321");
  EXPECT_EQ(env["PAISOAR_JOB_TOKEN"], "t0ken");
  EXPECT_EQ(env["TORCHELASTIC_RESTART_COUNT"], "2");
  EXPECT_EQ(env["PAISOAR_RESTART_COUNT"], "2");
  EXPECT_EQ(env["TORCHELASTIC_MAX_RESTARTS"], "3");
  EXPECT_EQ(env["TORCHELASTIC_RUN_ID"], "abc");
  EXPECT_EQ(env["OMP_NUM_THREADS"], "4");  // 8 cpus / 2 ranks
  EXPECT_EQ(env["GROUP_WORLD_SIZE"], "2");  // nodes
  EXPECT_EQ(env["ROLE_NAME"], "default");
  EXPECT_EQ(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "1");
  EXPECT_EQ(env.count("TORCHELASTIC_ERROR_FILE"), 0u) << "none given";
}

TEST(RankEnv, TorchrunsStoreAndErrorVariables) {
  LaunchOptions o = two_nodes_of_two();
  o.role = "trainer";
  RankEnvContext ctx;
  ctx.error_file = "/tmp/x/rank_3.error.json";
  // Inherited from a torchrun that started this launcher: must not make
  // torch's env:// look for a store the launcher does not host.
  auto env = as_map(build_rank_env(o, ctx, {"TORCHELASTIC_USE_AGENT_STORE=True",
                                            "TORCH_NCCL_ASYNC_ERROR_HANDLING=3",
                                            "TORCHELASTIC_ERROR_FILE=/old"}));
  EXPECT_EQ(env["TORCHELASTIC_USE_AGENT_STORE"], "False");
  EXPECT_EQ(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "3") << "the user's, as torchrun";
  EXPECT_EQ(env["TORCHELASTIC_ERROR_FILE"], "/tmp/x/rank_3.error.json");
  EXPECT_EQ(env["ROLE_NAME"], "trainer");
}

TEST(RankEnv, WithoutATokenTheLaunchersOwnIsKept) {
  auto env = as_map(build_rank_env(two_nodes_of_two(), RankEnvContext{}, {"PAISOAR_JOB_TOKEN=mine"}));
  EXPECT_EQ(env["PAISOAR_JOB_TOKEN"], "mine");
}

TEST(RankEnv, OmpNumThreadsPrecedence) {
  LaunchOptions o = two_nodes_of_two();
  o.nproc_per_node = 3;
  RankEnvContext ctx;
  ctx.cpu_count = 8;
  EXPECT_EQ(as_map(build_rank_env(o, ctx, {}))["OMP_NUM_THREADS"], "2");
  ctx.cpu_count = 2;
  EXPECT_EQ(as_map(build_rank_env(o, ctx, {}))["OMP_NUM_THREADS"], "1");  // never 0
  EXPECT_EQ(as_map(build_rank_env(o, ctx, {"OMP_NUM_THREADS=7"}))["OMP_NUM_THREADS"], "7");
  o.omp_num_threads = 5;
  EXPECT_EQ(as_map(build_rank_env(o, ctx, {"OMP_NUM_THREADS=7"}))["OMP_NUM_THREADS"], "5");
}

TEST(RankEnv, NodeCpusNameTheLaunchersMask) {
  RankEnvContext ctx;
  EXPECT_EQ(as_map(build_rank_env(two_nodes_of_two(), ctx, {})).count("PAISOAR_NODE_CPUS"), 0u);
  ctx.node_cpus = "0-7";
  EXPECT_EQ(as_map(build_rank_env(two_nodes_of_two(), ctx, {"PAISOAR_NODE_CPUS=3"}))["PAISOAR_NODE_CPUS"], "0-7");
}

TEST(RankEnv, RunIdsAreRandomHex) {
  std::string a = make_run_id(), b = make_run_id();
  EXPECT_EQ(a.size(), 16u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
  EXPECT_GE(available_cpus(), 1);
}

TEST(RankCommand, PythonProgramsRunAsTorchrunRunsThem) {
  const std::vector<std::string> script = {"dir/train.py", "--lr", "0.1"};
  EXPECT_EQ(rank_command(script, PythonMode::kBySuffix, ""),
            (std::vector<std::string>{"python3", "-u", "dir/train.py", "--lr", "0.1"}));
  EXPECT_EQ(rank_command(script, PythonMode::kBySuffix, "/usr/bin/python3")[0], "/usr/bin/python3");
  EXPECT_EQ(rank_command(script, PythonMode::kNever, "py"), script) << "--no-python";
  const std::vector<std::string> binary = {"./train", "x.py"};
  EXPECT_EQ(rank_command(binary, PythonMode::kBySuffix, "py"), binary);
  EXPECT_EQ(rank_command(binary, PythonMode::kScript, "py"),
            (std::vector<std::string>{"py", "-u", "./train", "x.py"}))
      << "--run-path: under Python whatever the name";
  EXPECT_EQ(rank_command({"pkg.train", "-x"}, PythonMode::kModule, "py"),
            (std::vector<std::string>{"py", "-u", "-m", "pkg.train", "-x"}));
  EXPECT_FALSE(is_python_script(".py"));
  EXPECT_FALSE(is_python_script("run.pyc"));
}

// torchrun runs ranks under its own interpreter (sys.executable) unless
// PYTHON_EXEC says otherwise; paisoar's own is the one it was built with.
TEST(RankCommand, TheInterpreterIsPaisoarPythonThenPythonExecThenTheBuildsPython) {
  const PythonInterpreter given = python_interpreter("/a/python", "/b/python", "/bin/sh");
  EXPECT_EQ(given.path, "/a/python");
  EXPECT_EQ(given.source, "$PAISOAR_PYTHON");
  const PythonInterpreter exec = python_interpreter("", "/b/python", "/bin/sh");
  EXPECT_EQ(exec.path, "/b/python");
  EXPECT_EQ(exec.source, "$PYTHON_EXEC");
  const PythonInterpreter built = python_interpreter("", "", "/bin/sh");  // an executable file
  EXPECT_EQ(built.path, "/bin/sh");
  EXPECT_EQ(built.source, kBuiltWithSource);
  for (const char* gone : {"/nonexistent/bin/python", "", "python3"}) {
    const PythonInterpreter fallback = python_interpreter("", "", gone);
    EXPECT_EQ(fallback.path, "python3") << gone;
    EXPECT_EQ(fallback.source, kDefaultSource) << gone;
  }
}

bool mentions(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(RankCommand, AMissingTorchIsReportedWithTheInterpreterAndWhatToDo) {
  const std::string built = "/venv/bin/python";
  const std::string from_env =
      missing_torch_message({"/usr/bin/python3.9", "$PAISOAR_PYTHON"}, built);
  EXPECT_TRUE(mentions(from_env, "the ranks ran under Python '/usr/bin/python3.9' ($PAISOAR_PYTHON), "
                                 "which cannot import torch"))
      << from_env;
  EXPECT_TRUE(mentions(from_env, "Set PAISOAR_PYTHON to the Python of an environment with torch and "
                                 "paisoar, e.g. PAISOAR_PYTHON=/venv/bin/python (the Python this "
                                 "paisoar was built with)."))
      << from_env;
  // The first python3 on PATH: its full path, and why no better one was known.
  const std::string on_path = missing_torch_message({"sh", kDefaultSource}, "");
  EXPECT_TRUE(mentions(on_path, "Python '" + resolve_in_path("sh") + "' (the first python3 on PATH)"))
      << on_path;
  EXPECT_NE(resolve_in_path("sh"), "sh") << "sh is on every PATH";
  EXPECT_TRUE(mentions(on_path, "built without a Python of its own")) << on_path;
  EXPECT_TRUE(mentions(on_path, "Run the `paisoar` command of the Python environment that has torch"))
      << on_path;
  const std::string gone = missing_torch_message({"python3", kDefaultSource}, "/old/venv/bin/python");
  EXPECT_TRUE(mentions(gone, "The Python this paisoar was built with, /old/venv/bin/python, is not "
                             "there any more."))
      << gone;
  const std::string built_lost = missing_torch_message({built, kBuiltWithSource}, built);
  EXPECT_TRUE(mentions(built_lost, "Reinstall torch in its environment, or set PAISOAR_PYTHON"))
      << built_lost;
}

}  // namespace
}  // namespace paisoar::launch
