// Hang diagnosis end to end (docs/DIAGNOSIS.md): under `paisoar launch`
// every rank keeps a flight record the launcher reads; when a rank has
// waited --hang_timeout seconds (30 by default) in a collective another rank
// did not reach, the launcher names that rank and what it does instead, and
// ends the job as failed. Three hangs: a rank of the main job stopped with
// SIGSTOP (default settings), a rank stuck in its data loader (the test
// fault point train.next_batch stalls it), and a rank that skips a
// collective (hang_check skip).
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "launcher_runner.h"

namespace paisoar::launch::testing {
namespace {

std::vector<std::string> train_args(const std::string& run_dir, const std::vector<std::string>& launcher_flags = {}) {
  std::vector<std::string> args = {"launch", "--nproc_per_node", "2", "--master_port", "0", "--omp_num_threads",
                                   "1", "--grace_period", "2"};
  args.insert(args.end(), launcher_flags.begin(), launcher_flags.end());
  const std::vector<std::string> train = {"--", PAISOAR_BIN, "train",
          "--set", "amp.dtype=fp32", "--set", "data.train_limit=6400", "--set", "data.eval_limit=64",
          "--set", "data.workers=1", "--set", "train.batch_size=64", "--set", "train.log_every=1",
          "--set", "profiler.enabled=false", "--set", "run_dir=" + run_dir};
  args.insert(args.end(), train.begin(), train.end());
  return args;
}

void expect_has(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in:\n" << text;
}

// The main job's CNN on 2 ranks, default launcher settings; rank 1 SIGSTOPped
// after step 3. The launcher names it and ends the job (no restart by default).
TEST(HangDiagnosisEndToEnd, AStoppedRankOfTheMainJobIsNamedWithTheDefaults) {
  const std::string dir = make_temp_dir();
  LauncherRun run(train_args(dir + "/run"));
  ASSERT_TRUE(run.wait_for_stdout("[rank0]: epoch 0 step 3/", 1, 90)) << "the run did not get going";
  const pid_t rank1 = child_with_rank(run.pid(), 1);
  ASSERT_GT(rank1, 0) << "rank 1's process not found among the launcher's children";
  const auto stopped_at = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(rank1, SIGSTOP), 0);
  RunResult r = run.finish(120);  // the hang guard; the default --hang_timeout is 30 s
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped_at).count();
  std::cout << "the job ended " << took << " s after the SIGSTOP\n";
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  // Stopped before a collective ("did not reach ...: it is stopped (SIGSTOP; it
  // was in ...") or inside one ("is stopped (SIGSTOP) inside ..."): when is chance.
  expect_has(r.err, "hang: rank 1 (local_rank 1, pid " + std::to_string(rank1) + ") ");
  expect_has(r.err, "of group 'world'");
  expect_has(r.err, "stopped (SIGSTOP");
  expect_has(r.err, "Waiting: rank 0 has waited ");
  expect_has(r.err, "(--hang_timeout 30; docs/DIAGNOSIS.md)");
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(HangDiagnosisEndToEnd, ARankStuckInItsDataLoaderIsNamed) {
  const std::string dir = make_temp_dir();
  RunResult r = run_paisoar(train_args(dir + "/run", {"--hang_timeout", "5"}),
                            {"PAISOAR_TEST_FAULT=train.next_batch:5=STALL", "PAISOAR_TEST_FAULT_RANK=1"});
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  expect_has(r.err, "hang: rank 1 (local_rank 1, pid ");
  expect_has(r.err, "it has been in data loading at step 5 for ");
  expect_has(r.err, "stuck in its data loader");
  expect_has(r.err, "Waiting: rank 0 has waited ");
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(HangDiagnosisEndToEnd, ARankThatSkipsACollectiveIsNamed) {
  RunResult r = run_paisoar({"launch", "--nproc_per_node", "2", "--master_port", "0", "--omp_num_threads", "1",
                             "--grace_period", "2", "--hang_timeout", "5", "--", HANG_CHECK, "skip"});
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  // Each waits for the other: whichever waited first is the one named waiting.
  expect_has(r.err, "hang: rank ");
  expect_has(r.err, "allreduce #5 of group 'world' (1024 Float)");
  expect_has(r.err, "allreduce #1 of group 'world/g0' (16 Float)");
  expect_has(r.err, "mismatched control flow");
}

}  // namespace
}  // namespace paisoar::launch::testing
