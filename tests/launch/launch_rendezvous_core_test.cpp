// The test with real ranks: a 2-rank job (rendezvous_probe, joined
// through Communicator::from_env and allreducing) runs under the launcher
// while a third LibTorch process with a wrong PAISOAR_JOB_TOKEN tries to join
// as rank 1. It fails at once with a clear message; the launcher logs the
// refusal; the job's results are unchanged and it exits 0.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "launch/free_port.h"
#include "launcher_runner.h"

namespace paisoar::launch::testing {
namespace {

TEST(RendezvousJob, AWrongTokenCannotJoinAndTheJobGoesOn) {
  const int port = pick_free_port_pair("127.0.0.1");
  const std::string go = make_temp_dir() + "/go";
  LauncherRun job({"launch", "--nproc_per_node", "2", "--master_port", std::to_string(port),
                   "--omp_num_threads", "1", "--", RENDEZVOUS_PROBE, go},
                  {"PAISOAR_JOB_TOKEN=the-jobs-token"});
  ASSERT_TRUE(job.wait_for_stdout("joined sum=3", 2, 60)) << "the job did not form";

  // Everything a rank of this job gets, except the token.
  LauncherRun intruder({go},
                       {"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2",
                        "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port + 1),
                        "PAISOAR_STORE_ADDR=127.0.0.1", "PAISOAR_STORE_PORT=" + std::to_string(port),
                        "PAISOAR_RESTART_COUNT=0", "PAISOAR_JOB_TOKEN=a-guessed-token",
                        "OMP_NUM_THREADS=1"},
                       RENDEZVOUS_PROBE);
  RunResult refused = intruder.finish(60);
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("the rendezvous store refused this process: PAISOAR_JOB_TOKEN does "
                             "not match the job's"),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(refused.out, "");

  std::ofstream(go) << "go\n";
  RunResult r = job.finish(60);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[rank0]: done sum=3\n"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("[rank1]: done sum=3\n"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find("paisoar launch: refused a connection from 127.0.0.1:"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(": wrong job token\n"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace paisoar::launch::testing
