// The main job end to end: `paisoar launch` starting `paisoar demo`, whose ranks
// join through Communicator::from_env (the launcher's store, with the job token) and
// check every collective's result; on one node, self-relaunched, and as two
// launchers acting as two nodes of one 4-rank group.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "launch/free_port.h"
#include "launcher_runner.h"

namespace paisoar::launch::testing {
namespace {

void expect_rank_ok(const RunResult& r, int rank, int world) {
  const std::string ok = "[rank" + std::to_string(rank) + "]: rank " + std::to_string(rank) + "/" +
                         std::to_string(world) + ": all results correct";
  EXPECT_NE(r.out.find(ok), std::string::npos) << "stdout:\n" << r.out << "stderr:\n" << r.err;
}

const std::vector<std::string> kDemo = {PAISOAR_BIN, "demo", "--numel", "30000", "--iters", "2"};

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(MainJob, TwoRanksOnOneNode) {
  RunResult r = run_paisoar(concat({"launch", "--nproc_per_node", "2", "--master_port", "0",
                                    "--omp_num_threads", "1", "--"},
                                   kDemo));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  expect_rank_ok(r, 0, 2);
  expect_rank_ok(r, 1, 2);
}

// Training end to end: 2 launched ranks, DDP, a short fp32 run on 1280
// Fashion-MNIST images; the loss must fall below ln(10) = 2.30 (chance) and the
// ranks must report a test accuracy.
TEST(MainJob, TrainsTheReferenceCnnOnTwoRanks) {
  RunResult r = run_paisoar({"launch", "--nproc_per_node", "2", "--master_port", "0",
                             "--omp_num_threads", "1", "--", PAISOAR_BIN, "train", "--set",
                             "amp.dtype=fp32", "--set", "data.train_limit=1280", "--set",
                             "data.eval_limit=200", "--set", "train.log_every=10", "--set",
                             "checkpoint.resume=false", "--set",
                             "run_dir=" + ::testing::TempDir() + "paisoar_main_job"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[rank0]: epoch 0 step 10: test accuracy"), std::string::npos) << r.out << r.err;
  const auto at = r.out.find("step 10/10  loss ");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_LT(std::stod(r.out.substr(at + 17, 6)), 2.30) << r.out;
}

// Hybrid parallelism end to end: configs/fashion_mnist_hybrid.yaml on 4
// launched ranks (pipeline 2 x tensor 2), a short fp32 run: the plan and the
// per-stage times are printed, the loss falls below chance and every part is
// checkpointed.
TEST(MainJob, TrainsTheHybridConfigOnFourRanks) {
  const std::string run_dir = ::testing::TempDir() + "paisoar_hybrid_job_" + std::to_string(::getpid());
  RunResult r = run_paisoar({"launch", "--nproc_per_node", "4", "--master_port", "0", "--omp_num_threads", "1",
                             "--", PAISOAR_BIN, "train", "--config", PAISOAR_SOURCE_DIR "/configs/fashion_mnist_hybrid.yaml",
                             "--set", "amp.dtype=fp32", "--set", "data.train_limit=1280", "--set",
                             "data.eval_limit=200", "--set", "train.log_every=10", "--set", "checkpoint.every_steps=5",
                             "--set", "run_dir=" + run_dir});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[rank0]: parallel: data 1 x pipeline 2 x tensor 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[rank0]: pipeline plan: 5 layers in 2 stages"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[rank0]: pipeline per stage (1f1b, 2 stages, 8 micro-batches"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(P-1)/(M+P-1) = 11.1%"), std::string::npos) << r.out;
  const auto at = r.out.find("step 10/10  loss ");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_LT(std::stod(r.out.substr(at + 17, 6)), 2.30) << r.out;
  for (const char* part : {"p0-t0", "p0-t1", "p1-t0", "p1-t1"}) {
    EXPECT_TRUE(std::filesystem::exists(run_dir + "/checkpoints/parts-000000000010/" + part + "/part.safetensors"))
        << part;
  }
  std::filesystem::remove_all(run_dir);
}

// `paisoar convert` end to end on Fashion-MNIST's test set: the summary, the
// files, and a second run into the same directory refused without harm.
TEST(MainJob, ConvertWritesShardsAndRefusesToOverwrite) {
  const std::string fmnist = "/usr/share/datasets/fashion-mnist/";
  const std::string out = ::testing::TempDir() + "paisoar_convert_cli_" + std::to_string(::getpid());
  const std::vector<std::string> args = {"convert", "idx", "--images", fmnist + "t10k-images-idx3-ubyte.gz",
                                         "--labels", fmnist + "t10k-labels-idx1-ubyte.gz", "--out", out,
                                         "--records-per-shard", "4000", "--quiet"};
  RunResult r = run_paisoar(args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("10000 records in 3 shards"), std::string::npos) << r.out;
  for (const char* f : {"/dataset.json", "/shard-000002.tar", "/shard-000002.tar.idx"}) {
    EXPECT_EQ(::access((out + f).c_str(), R_OK), 0) << f;
  }
  RunResult again = run_paisoar(args);
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("already holds a data set"), std::string::npos) << again.err;
  EXPECT_EQ(::access((out + "/shard-000000.tar").c_str(), R_OK), 0) << "the first run's shards stay";
  std::system(("rm -rf '" + out + "'").c_str());
}

TEST(MainJob, DemoStartsItsOwnRanksWithoutALauncher) {
  RunResult r = run_paisoar({"demo", "--nproc", "3", "--numel", "3000", "--iters", "1"},
                            {"RANK", "WORLD_SIZE", "OMP_NUM_THREADS=1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (int rank = 0; rank < 3; ++rank) expect_rank_ok(r, rank, 3);
}

TEST(MainJob, TwoLaunchersFormOneFourRankGroup) {
  const std::string port = std::to_string(pick_free_port_pair("127.0.0.1"));
  const std::vector<std::string> env = {"PAISOAR_JOB_TOKEN=two-nodes-one-group"};
  auto node = [&](int node_rank) {
    return concat({"launch", "--nnodes", "2", "--node_rank", std::to_string(node_rank),
                   "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port", port,
                   "--omp_num_threads", "1", "--"},
                  kDemo);
  };
  LauncherRun node0(node(0), env);
  LauncherRun node1(node(1), env);
  RunResult r0 = node0.finish();
  RunResult r1 = node1.finish();
  ASSERT_EQ(r0.exit_code, 0) << r0.out << r0.err;
  ASSERT_EQ(r1.exit_code, 0) << r1.out << r1.err;
  expect_rank_ok(r0, 0, 4);
  expect_rank_ok(r0, 1, 4);
  expect_rank_ok(r1, 2, 4);
  expect_rank_ok(r1, 3, 4);
}

}  // namespace
}  // namespace paisoar::launch::testing
