// rank_info_from_env: torchrun, Slurm and Open MPI variables, the launcher's
// store and job token, and bad values; comm_options_from_env.
#include <gtest/gtest.h>

#include <c10/util/Exception.h>

#include "paisoar/comm/env.h"

using paisoar::comm::EnvMap;
using paisoar::comm::rank_info_from_env;

TEST(RankInfoFromEnv, NoVariablesIsOneRank) {
  auto info = rank_info_from_env(EnvMap{});
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.world_size, 1);
  EXPECT_EQ(info.source, "default");
}

TEST(RankInfoFromEnv, TorchrunVariables) {
  auto info = rank_info_from_env(EnvMap{{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"},
                                        {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.0.0.1"},
                                        {"MASTER_PORT", "1234"}});
  EXPECT_EQ(info.source, "torchrun");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.world_size, 4);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_world_size, 2);
  EXPECT_EQ(info.master_addr, "10.0.0.1");
  EXPECT_EQ(info.master_port, 1234);
}

TEST(RankInfoFromEnv, TheLaunchersStoreAndJobToken) {
  EnvMap env{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "1235"}};
  auto plain = rank_info_from_env(env);
  EXPECT_EQ(plain.store_port, 0) << "not under paisoar launch: rank 0 hosts a store";
  env["PAISOAR_STORE_PORT"] = "1234";
  env["PAISOAR_JOB_TOKEN"] = "tok";
  env["TORCHELASTIC_RESTART_COUNT"] = "2";
  auto launched = rank_info_from_env(env);
  EXPECT_EQ(launched.store_addr, "10.0.0.1");  // PAISOAR_STORE_ADDR unset: the master
  EXPECT_EQ(launched.store_port, 1234);
  EXPECT_EQ(launched.job_token, "tok");
  EXPECT_EQ(launched.restart_count, 2);
  env["PAISOAR_STORE_ADDR"] = "10.0.0.9";
  env["PAISOAR_RESTART_COUNT"] = "3";
  launched = rank_info_from_env(env);
  EXPECT_EQ(launched.store_addr, "10.0.0.9");
  EXPECT_EQ(launched.restart_count, 3);
  env.erase("PAISOAR_JOB_TOKEN");
  try {
    rank_info_from_env(env);
    FAIL() << "a store without a token was accepted";
  } catch (const c10::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("PAISOAR_JOB_TOKEN"), std::string::npos) << e.what();
  }
  env["PAISOAR_JOB_TOKEN"] = "tok";
  env["PAISOAR_STORE_PORT"] = "70000";
  EXPECT_THROW(rank_info_from_env(env), c10::ValueError);
}

TEST(RankInfoFromEnv, SlurmVariablesAndNodelist) {
  auto info = rank_info_from_env(EnvMap{{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"},
                                        {"SLURM_LOCALID", "1"}, {"SLURM_TASKS_PER_NODE", "4(x2)"},
                                        {"SLURM_JOB_NODELIST", "gpu[07-08,11]"},
                                        {"SLURM_JOB_ID", "123456"}});
  EXPECT_EQ(info.source, "slurm");
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_world_size, 4);
  EXPECT_EQ(info.master_addr, "gpu07");
  EXPECT_EQ(info.master_port, 29500 + 456);
  auto plain = rank_info_from_env(EnvMap{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                                         {"SLURM_NODELIST", "alpha,beta"}, {"MASTER_PORT", "999"}});
  EXPECT_EQ(plain.master_addr, "alpha");
  EXPECT_EQ(plain.master_port, 999);
}

TEST(RankInfoFromEnv, OpenMpiVariables) {
  auto info = rank_info_from_env(EnvMap{{"OMPI_COMM_WORLD_RANK", "1"},
                                        {"OMPI_COMM_WORLD_SIZE", "2"},
                                        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                        {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(info.source, "openmpi");
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.master_addr, "127.0.0.1");
  // Across nodes Open MPI does not say where rank 0 is.
  EXPECT_THROW(rank_info_from_env(EnvMap{{"OMPI_COMM_WORLD_RANK", "1"},
                                         {"OMPI_COMM_WORLD_SIZE", "4"},
                                         {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}),
               c10::ValueError);
}

TEST(RankInfoFromEnv, BadValuesNameTheVariable) {
  auto message = [](const EnvMap& env) {
    try {
      rank_info_from_env(env);
    } catch (const c10::ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"RANK", "x"}, {"WORLD_SIZE", "2"}}).find("RANK='x'"), std::string::npos);
  EXPECT_NE(message({{"RANK", "0"}}).find("WORLD_SIZE is missing"), std::string::npos);
  EXPECT_NE(message({{"RANK", "2"}, {"WORLD_SIZE", "2"}}).find("must be below"), std::string::npos);
  EXPECT_NE(message({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "70000"}})
                .find("MASTER_PORT"),
            std::string::npos);
}

TEST(CommOptionsFromEnv, CommBackendIsForcedByNameAndABadNameIsNamed) {
  using paisoar::comm::Backend;
  using paisoar::comm::comm_options_from_env;
  EXPECT_EQ(comm_options_from_env(EnvMap{}, {}).backend, Backend::Auto);
  EXPECT_EQ(comm_options_from_env(EnvMap{{"PAISOAR_COMM_BACKEND", "shm"}}, {}).backend, Backend::Shm);
  EXPECT_EQ(comm_options_from_env(EnvMap{{"PAISOAR_COMM_BACKEND", "gloo"}}, {}).backend, Backend::Gloo);
  try {
    comm_options_from_env(EnvMap{{"PAISOAR_COMM_BACKEND", "mpi"}}, {});
    ADD_FAILURE() << "mpi accepted";
  } catch (const c10::ValueError& e) {
    EXPECT_NE(std::string(e.what_without_backtrace()).find("PAISOAR_COMM_BACKEND=mpi is not a backend"),
              std::string::npos);
  }
}
