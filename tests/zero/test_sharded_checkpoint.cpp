// Sharded checkpoints: saved by 2 ranks, loaded by 3 (and by 1), the model and
// the optimizer state are the same (the next step matches the run that never
// stopped, rtol 1e-5); consolidation writes the whole model; missing shard
// files and files of another save are clear errors.
#include <gtest/gtest.h>

#include <filesystem>

#include "paisoar/format/safetensors.h"
#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"
#include "tests/zero/zero_harness.h"

using namespace paisoar;
using paisoar::testing::Recipe;

namespace {

// A global batch of 12 samples per step, split evenly over any of 1, 2, 3 ranks.
struct GlobalData {
  std::vector<torch::Tensor> x, y;
};

GlobalData global_data(int steps) {
  torch::manual_seed(21);
  GlobalData d;
  for (int s = 0; s < steps; ++s) {
    d.x.push_back(torch::randn({12, 8}));
    d.y.push_back(torch::randint(4, {12}));
  }
  return d;
}

void train(zero::ZeroOptimizer& opt, const std::shared_ptr<torch::nn::Module>& model, int stage,
           const GlobalData& d, int from, int to, int rank, int world) {
  for (int s = from; s < to; ++s) {
    opt.zero_grad();
    auto x = d.x[s].chunk(world)[rank], y = d.y[s].chunk(world)[rank];
    torch::cross_entropy_loss(paisoar::testing::zero_forward(model, stage, x), y).backward();
    opt.step();
  }
}

// Saves after 2 AdamW steps on `save_world` ranks (stage `save_stage`) into
// `dir`, returns the parameters after a 3rd step.
std::vector<torch::Tensor> save_run(const std::string& dir, int save_world, int save_stage, const GlobalData& d) {
  Recipe r;
  r.adamw = true;
  std::vector<torch::Tensor> after;
  std::mutex mutex;
  paisoar::testing::run_ranks(save_world, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto model = paisoar::testing::zero_model(paisoar::testing::rank_net(rank, mutex), save_stage);
    zero::ZeroOptimizer opt(model, comm, paisoar::testing::factory(r), paisoar::testing::zero_options(save_stage));
    train(opt, model, save_stage, d, 0, 2, rank, save_world);
    zero::save_sharded(opt, *format::local_file_system(), dir, {{"step", "2"}});
    train(opt, model, save_stage, d, 2, 3, rank, save_world);
    auto full = opt.full_parameters();
    std::lock_guard<std::mutex> lock(mutex);
    if (rank == 0) after = full;
  });
  return after;
}

// Loads `dir` on `world` ranks at `stage`, takes the 3rd step, returns the parameters.
std::vector<torch::Tensor> resume_run(const std::string& dir, int world, int stage, const GlobalData& d) {
  Recipe r;
  r.adamw = true;
  std::vector<torch::Tensor> after;
  std::mutex mutex;
  paisoar::testing::run_ranks(world, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto model = paisoar::testing::zero_model(paisoar::testing::rank_net(rank + 7, mutex), stage);
    zero::ZeroOptimizer opt(model, comm, paisoar::testing::factory(r), paisoar::testing::zero_options(stage));
    auto meta = zero::load_sharded(opt, *format::local_file_system(), dir);
    EXPECT_EQ(meta.at("step"), "2");
    train(opt, model, stage, d, 2, 3, rank, world);
    auto full = opt.full_parameters();
    std::lock_guard<std::mutex> lock(mutex);
    if (rank == 0) after = full;
  });
  return after;
}

TEST(ZeroShardedCheckpoint, SavedOnTwoRanksLoadsOnThreeAndOne) {
  paisoar::testing::TempDir tmp("zero_ckpt");
  auto d = global_data(3);
  const std::string dir = tmp / "step2";
  auto want = save_run(dir, 2, 2, d);
  EXPECT_TRUE(std::filesystem::exists(dir + "/zero-0-of-2.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/zero-1-of-2.safetensors"));
  paisoar::testing::expect_close(resume_run(dir, 3, 2, d), want, 1e-5, 1e-6);
  paisoar::testing::expect_close(resume_run(dir, 3, 1, d), want, 1e-5, 1e-6);
  paisoar::testing::expect_close(resume_run(dir, 1, 3, d), want, 1e-5, 1e-6);
}

TEST(ZeroShardedCheckpoint, ConsolidatesIntoOneModelFile) {
  paisoar::testing::TempDir tmp("zero_cons");
  auto d = global_data(3);
  const std::string dir = tmp / "ckpt";
  Recipe r;
  std::vector<torch::Tensor> want;
  std::mutex mutex;
  paisoar::testing::run_ranks(3, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    auto model = paisoar::testing::zero_model(paisoar::testing::rank_net(rank, mutex), 3);
    zero::ZeroOptimizer opt(model, comm, paisoar::testing::factory(r), paisoar::testing::zero_options(3));
    train(opt, model, 3, d, 0, 1, rank, 3);
    zero::save_sharded(opt, *format::local_file_system(), dir);
    auto full = opt.full_parameters();
    std::lock_guard<std::mutex> lock(mutex);
    if (rank == 0) want = full;
  });
  zero::consolidate_shards(*format::local_file_system(), dir, tmp / "model.safetensors");
  auto ck = format::load_safetensors(tmp / "model.safetensors");
  const char* names[] = {"model.0.weight", "model.0.bias", "model.2.weight", "model.2.bias"};
  ASSERT_EQ(ck.tensors.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(ck.tensors.count(names[i])) << names[i];
    EXPECT_TRUE(torch::equal(ck.tensors.at(names[i]), want[i])) << names[i];
  }
}

TEST(ZeroShardedCheckpoint, ShardNamesThatLieAreClearErrorsAndTheOutputCannotBeAShard) {
  paisoar::testing::TempDir tmp("zero_names");
  auto d = global_data(3);
  save_run(tmp / "a", 2, 1, d);
  namespace fs = std::filesystem;
  const auto shard0 = (tmp / "a/zero-0-of-2.safetensors");
  const auto before = fs::file_size(shard0);
  paisoar::testing::expect_error([&] { zero::consolidate_shards(*format::local_file_system(), tmp / "a", shard0); },
                                 {"zero-0-of-2.safetensors", "would destroy that input"});
  EXPECT_EQ(fs::file_size(shard0), before);
  fs::create_directories(tmp / "huge");
  fs::copy_file(shard0, tmp / "huge/zero-0-of-999999.safetensors");  // once: 999999 names built and listed
  paisoar::testing::expect_error([&] { zero::consolidate_shards(*format::local_file_system(), tmp / "huge", tmp / "out.safetensors"); },
                                 {"incomplete", "zero-1-of-999999.safetensors", "and 999994 more"});
  fs::copy_file(shard0, tmp / "a/zero-5-of-2.safetensors");
  paisoar::testing::expect_error([&] { zero::consolidate_shards(*format::local_file_system(), tmp / "a", tmp / "out.safetensors"); },
                                 {"zero-5-of-2.safetensors", "outside a 2-rank save"});
}

TEST(ZeroShardedCheckpoint, MissingOrForeignShardsAreClearErrors) {
  paisoar::testing::TempDir tmp("zero_bad");
  auto d = global_data(3);
  save_run(tmp / "a", 3, 1, d);
  save_run(tmp / "b", 3, 1, d);
  namespace fs = std::filesystem;
  fs::remove(tmp / "a/zero-1-of-3.safetensors");
  fs::remove(tmp / "a/zero-2-of-3.safetensors");
  paisoar::testing::expect_error([&] { zero::consolidate_shards(*format::local_file_system(), tmp / "a", tmp / "out.safetensors"); },
                                 {"incomplete", "zero-1-of-3.safetensors, zero-2-of-3.safetensors"});
  fs::copy_file(tmp / "b/zero-1-of-3.safetensors", tmp / "a/zero-1-of-3.safetensors");
  fs::copy_file(tmp / "b/zero-2-of-3.safetensors", tmp / "a/zero-2-of-3.safetensors");
  paisoar::testing::expect_error([&] { zero::consolidate_shards(*format::local_file_system(), tmp / "a", tmp / "out.safetensors"); },
                                 {"another save", "zero-1-of-3.safetensors, zero-2-of-3.safetensors"});
  fs::copy_file(tmp / "b/zero-0-of-3.safetensors", tmp / "b/zero-0-of-2.safetensors");
  paisoar::testing::expect_error([&] { zero::consolidate_shards(*format::local_file_system(), tmp / "b", tmp / "out.safetensors"); },
                                 {"several saves"});
  paisoar::testing::expect_error([&] { zero::consolidate_shards(*format::local_file_system(), tmp / "nowhere", tmp / "out.safetensors"); },
                                 {"does not exist"});
  // Another model: the error lists every difference, on every rank.
  fs::remove(tmp / "b/zero-0-of-2.safetensors");
  std::mutex mutex;
  paisoar::testing::run_ranks(2, [&](int rank, std::shared_ptr<comm::Communicator> comm) {
    torch::nn::Sequential net;
    {
      std::lock_guard<std::mutex> lock(mutex);
      net = torch::nn::Sequential(torch::nn::Linear(8, 5), torch::nn::Functional(torch::relu),
                                  torch::nn::Linear(5, 4));
    }
    zero::ZeroOptimizer opt(net.ptr(), comm, paisoar::testing::factory(Recipe{}),
                            paisoar::testing::zero_options(1));
    paisoar::testing::expect_error([&] { zero::load_sharded(opt, *format::local_file_system(), tmp / "b"); },
                                   {"does not fit this model", "'0.weight' has shape [13, 8] in the files, [5, 8]"});
  });
}

}  // namespace
