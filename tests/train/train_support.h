// Test support for the Trainer tests: a small config, the zoo's model over
// synthetic blobs (or Fashion-MNIST where a test checks its accuracy),
// training with N thread-ranks (rank 0's parameters back, every rank's
// checked equal), and a tolerance comparison of parameter lists.
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "paisoar/train/trainer.h"
#include "paisoar/train/zoo.h"
#include "tests/support/synthetic_blobs.h"
#include "tests/support/thread_ranks.h"

namespace paisoar::testing {

inline bool have_fashion_mnist() {
  return std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
}

inline paisoar::train::TrainConfig small_config() {
  paisoar::train::TrainConfig c;
  c.run_dir = ::testing::TempDir() + "paisoar_trainer_test_" + std::to_string(::getpid());
  c.checkpoint.resume = false;
  c.amp.dtype = paisoar::train::AmpDtype::FP32;
  c.data.train_limit = 640;
  c.data.eval_limit = 200;
  c.data.workers = 2;
  c.train.batch_size = 64;
  c.train.log_every = 1000;
  c.schedule.warmup_steps = 2;
  return c;
}

// The zoo's model for `c` over synthetic blobs: data.train_limit training
// samples (640 when 0) and data.eval_limit evaluation ones (200 when 0), with
// jitter under data.augment. Seeds torch's global generator (make_task).
inline paisoar::train::TrainTask synthetic_task(
    const paisoar::train::TrainConfig& c,
    const std::shared_ptr<paisoar::comm::Communicator>& tensor_group = nullptr) {
  SyntheticBlobsOptions train, eval;
  train.size = c.data.train_limit > 0 ? c.data.train_limit : 640;
  train.jitter = c.data.augment;
  eval.size = c.data.eval_limit > 0 ? c.data.eval_limit : 200;
  eval.noise_seed = 2;
  return paisoar::train::make_task(c, std::make_shared<SyntheticBlobs>(train),
                                   std::make_shared<SyntheticBlobs>(eval), tensor_group);
}

enum class DataSource { Synthetic, FashionMnist };

// Trains with `world` thread-ranks; returns rank 0's parameters and result.
// `prepare`, when given, sees each rank's task last, before it is trained;
// `env` is every rank's RunEnvironment.
inline std::pair<std::vector<torch::Tensor>, paisoar::train::TrainResult> train_with(
    const paisoar::train::TrainConfig& c, int world, std::function<void(int64_t)> on_step = nullptr,
    DataSource data = DataSource::Synthetic,
    std::function<void(int rank, paisoar::train::TrainTask&)> prepare = nullptr,
    const paisoar::train::RunEnvironment& env = {}) {
  static std::mutex seed_mutex;  // make_task seeds torch's global generator
  std::vector<std::vector<torch::Tensor>> params(world);
  std::vector<paisoar::train::TrainResult> results(world);
  run_ranks(world, [&](int rank, std::shared_ptr<paisoar::comm::Communicator> comm) {
    paisoar::train::TrainTask task;
    {
      std::lock_guard<std::mutex> lock(seed_mutex);
      task = data == DataSource::Synthetic ? synthetic_task(c) : paisoar::train::make_task(c);
    }
    task.on_step = on_step;
    if (prepare) prepare(rank, task);
    results[rank] = paisoar::train::Trainer(c, comm, env).fit(task);
    for (const auto& p : task.model->parameters()) params[rank].push_back(p.detach().clone());
  });
  for (int r = 1; r < world; ++r) {
    for (size_t i = 0; i < params[0].size(); ++i) {
      EXPECT_TRUE(torch::equal(params[0][i], params[r][i])) << "rank " << r << " parameter " << i;
    }
  }
  return {params[0], results[0]};
}

inline void expect_close(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_LT((a[i] - b[i]).abs().max().item<double>(), tol) << "parameter " << i;
  }
}


struct RankRun {
  std::vector<torch::Tensor> initial, trained;
  paisoar::train::TrainResult result;
};

// Trains with `world` thread-ranks under any parallel: layout (each rank
// builds the zoo's task over its Trainer's tensor group); every rank's
// parameters before and after, and its result.
inline std::vector<RankRun> train_ranks(const paisoar::train::TrainConfig& c, int world,
                                        std::function<void(int64_t)> on_step = nullptr) {
  static std::mutex seed_mutex;  // make_task seeds torch's global generator
  std::vector<RankRun> runs(static_cast<size_t>(world));
  paisoar::testing::run_ranks(world, [&](int rank, std::shared_ptr<paisoar::comm::Communicator> comm) {
    paisoar::train::Trainer trainer(c, comm);
    paisoar::train::TrainTask task;
    {
      std::lock_guard<std::mutex> lock(seed_mutex);
      task = paisoar::testing::synthetic_task(c, trainer.tensor_group());
    }
    task.on_step = on_step;
    RankRun& run = runs[static_cast<size_t>(rank)];
    for (const auto& p : task.model->parameters()) run.initial.push_back(p.detach().clone());
    run.result = trainer.fit(task);
    size_t i = 0;
    for (const auto& p : task.model->parameters()) {
      // Another stage's parameter holds no memory on this rank: count it as untrained here.
      run.trained.push_back(p.storage().nbytes() == 0 ? run.initial[i] : p.detach().clone());
      ++i;
    }
  });
  return runs;
}

}  // namespace paisoar::testing
