// Elastic restart end to end: `paisoar launch --max_restarts 1` runs a 2-rank
// `paisoar train` with a checkpoint every 3 steps; rank 1 kills itself with
// SIGKILL after step 5 of the first attempt (the test-only fault point
// train.step, src/util/fault_point.h). The launcher stops rank 0, restarts
// both, they resume from step 3, and the job completes by itself. The final
// checkpoint's tensors equal an uninterrupted run's bit for bit (the data
// sections of the two safetensors files are compared byte for byte; their
// headers differ only in the config text, which names the run directory).
// And the heartbeat watchdog: rank 1 SIGSTOPped mid-run stops beating, the
// launcher (--heartbeat_timeout 2) reports it and restarts the group, and the
// run completes.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "launcher_runner.h"

namespace paisoar::launch::testing {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The tensor bytes of a safetensors file: what follows the 8-byte length and the header.
std::string data_section(const std::string& bytes) {
  if (bytes.size() < 8) return "";
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  return n + 8 <= bytes.size() ? bytes.substr(8 + n) : "";
}

std::vector<std::string> train_args(const std::string& run_dir, const std::string& max_restarts,
                                    const std::string& images = "640",
                                    const std::vector<std::string>& launcher_flags = {}) {
  std::vector<std::string> args = {"launch", "--nproc_per_node", "2", "--master_port", "0", "--omp_num_threads",
                                   "1", "--max_restarts", max_restarts, "--grace_period", "2"};
  args.insert(args.end(), launcher_flags.begin(), launcher_flags.end());
  const std::vector<std::string> train = {"--", PAISOAR_BIN, "train",
          "--set", "amp.dtype=fp32", "--set", "data.train_limit=" + images, "--set", "data.eval_limit=64",
          "--set", "data.workers=1", "--set", "train.batch_size=64", "--set", "train.log_every=1",
          "--set", "checkpoint.every_steps=3", "--set", "checkpoint.keep_last=10",
          "--set", "profiler.enabled=false", "--set", "run_dir=" + run_dir};
  args.insert(args.end(), train.begin(), train.end());
  return args;
}

// Rank 1 is killed (SIGKILL) at step 5; the launcher restarts the group,
// which resumes from step 3 and ends with the parameters of a clean run.
// `env`: the backend's setting, for both runs.
void killed_rank_run_ends_like_an_uninterrupted_one(const std::vector<std::string>& env) {
  const std::string dir = make_temp_dir();
  RunResult clean = run_paisoar(train_args(dir + "/clean", "0"), env);
  ASSERT_EQ(clean.exit_code, 0) << clean.out << clean.err;

  std::vector<std::string> fault = env;
  fault.push_back("PAISOAR_TEST_FAULT=train.step:5");
  fault.push_back("PAISOAR_TEST_FAULT_RANK=1");
  RunResult killed = run_paisoar(train_args(dir + "/killed", "1"), fault);
  ASSERT_EQ(killed.exit_code, 0) << killed.out << killed.err;
  EXPECT_NE(killed.err.find("rank 1"), std::string::npos) << killed.err;
  EXPECT_NE(killed.err.find("killed by signal 9"), std::string::npos) << killed.err;
  EXPECT_NE(killed.err.find("restarting the group (restart 1 of 1)"), std::string::npos) << killed.err;
  EXPECT_NE(killed.out.find("step-000000000003.safetensors at step 3"), std::string::npos)
      << "the restart resumes from the checkpoint of step 3\n" << killed.out;
  // Steps 4 and 5 ran twice: once before the kill, once after the resume.
  EXPECT_NE(killed.out.find("[rank0]: epoch 0 step 10/10"), std::string::npos) << killed.out;

  const std::string last = "/checkpoints/step-000000000010.safetensors";
  const std::string a = data_section(read_all(dir + "/clean" + last));
  const std::string b = data_section(read_all(dir + "/killed" + last));
  ASSERT_GT(a.size(), 100000u) << "no final checkpoint in " << dir << "/clean";
  EXPECT_TRUE(a == b) << "the final parameters differ from the uninterrupted run's";
  // Not equal by accident: training moved the parameters after the resume point.
  EXPECT_FALSE(a == data_section(read_all(dir + "/clean/checkpoints/step-000000000003.safetensors")));
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(ElasticRestart, KilledRankIsRestartedAndTheRunEndsLikeAnUninterruptedOne) {
  killed_rank_run_ends_like_an_uninterrupted_one({});
}

// The same over shared memory: the survivor sees its peer's process gone
// (not a closed socket), fails, and the restarted group forms a new segment.
TEST(ElasticRestart, KilledRankRecoversTheSameOverSharedMemory) {
  killed_rank_run_ends_like_an_uninterrupted_one({"PAISOAR_COMM_BACKEND=shm"});
}

TEST(ElasticRestart, WatchdogRestartsAGroupWithAStoppedRank) {
  const std::string dir = make_temp_dir();
  LauncherRun run(train_args(dir + "/stopped", "1", "1280", {"--heartbeat_timeout", "2"}));
  ASSERT_TRUE(run.wait_for_stdout("[rank0]: epoch 0 step 3/20", 1, 90)) << "the run did not get going";
  const pid_t rank1 = child_with_rank(run.pid(), 1);
  ASSERT_GT(rank1, 0) << "rank 1's process not found among the launcher's children";
  ASSERT_EQ(::kill(rank1, SIGSTOP), 0);  // hung: alive, silent, holding its peers in a collective
  RunResult r = run.finish(120);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("rank 1 (local_rank 1, pid " + std::to_string(rank1) + ") made no progress for"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("it is stopped (SIGSTOP)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("restarting the group (restart 1 of 1)"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("[rank0]: epoch 0 step 20/20"), std::string::npos) << r.out;
  std::system(("rm -rf '" + dir + "'").c_str());
}

}  // namespace
}  // namespace paisoar::launch::testing
