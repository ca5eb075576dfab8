// The Trainer under storage faults, on 2 thread-ranks: a checkpoint directory
// that cannot be created fails every rank at the start (none is left waiting
// in a collective); a full disk (every checkpoint write fails with ENOSPC)
// stops every rank with the error under checkpoint.on_error=stop, and under
// warn lets the run finish with a warning. A rank that stalls longer than
// the collective timeout is named by the rank that waited for it. A crash in
// the middle of a save, on a failing file system in memory, resumes from the
// checkpoint before.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "paisoar/format/safetensors.h"
#include "paisoar/comm/communicator.h"
#include "paisoar/train/trainer.h"
#include "paisoar/train/zoo.h"
#include "tests/support/faulty_file_system.h"
#include "src/util/fault_point.h"
#include "tests/support/temp_dir.h"
#include "tests/support/thread_ranks.h"
#include "tests/train/train_support.h"

using namespace paisoar;

namespace {

train::TrainConfig tiny_config(const std::string& run_dir) {
  train::TrainConfig c;
  c.run_dir = run_dir;
  c.amp.dtype = paisoar::train::AmpDtype::FP32;
  c.data.train_limit = 128;
  c.data.eval_limit = 64;
  c.data.workers = 1;
  c.train.batch_size = 64;  // 2 steps
  c.train.log_every = 1000;
  c.profiler.enabled = false;
  c.checkpoint.every_steps = 1;
  return c;
}

struct RankOutcome {
  bool finished = false;
  int64_t steps = 0;
  std::string error;
};

// Runs fit on 2 thread-ranks and reports each rank's outcome (no rethrow).
std::vector<RankOutcome> fit_on_two_ranks(const train::TrainConfig& c,
                                          std::function<void(int rank, int64_t step)> on_step = nullptr,
                                          comm::CommOptions options = paisoar::testing::test_options(),
                                          const train::RunEnvironment& env = {}) {
  static std::mutex seed_mutex;  // make_task seeds torch's global generator
  std::vector<RankOutcome> outcomes(2);
  comm::Store store = comm::Store::hash();
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        auto comm = comm::Communicator::create(store, rank, 2, options);
        train::TrainTask task;
        {
          std::lock_guard<std::mutex> lock(seed_mutex);
          task = paisoar::testing::synthetic_task(c);
        }
        if (on_step) task.on_step = [&on_step, rank](int64_t step) { on_step(rank, step); };
        outcomes[rank].steps = train::Trainer(c, comm, env).fit(task).steps;
        outcomes[rank].finished = true;
      } catch (const std::exception& e) {
        outcomes[rank].error = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return outcomes;
}

// A full disk for as long as it lives: every write(2) of a checkpoint file
// fails with ENOSPC (no mount, no privileges needed).
class FullDisk {
 public:
  FullDisk() { util::install_fault_injector(std::make_unique<util::FailAtPoint>("atomic_file.write", ENOSPC, 1)); }
  ~FullDisk() { util::install_fault_injector(nullptr); }
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(TrainerFaults, UnusableCheckpointDirectoryFailsEveryRankAtTheStart) {
  paisoar::testing::TempDir dir("trainer_faults");
  std::ofstream(dir / "a_file") << "x";
  auto c = tiny_config(dir / "run");
  c.checkpoint.dir = dir / "a_file/ckpt";
  const auto outcomes = fit_on_two_ranks(c);
  EXPECT_FALSE(outcomes[0].finished);
  EXPECT_FALSE(outcomes[1].finished);
  EXPECT_TRUE(contains(outcomes[0].error, "a_file/ckpt")) << outcomes[0].error;
  EXPECT_TRUE(contains(outcomes[1].error, "rank 0 cannot use checkpoint.dir")) << outcomes[1].error;
}

TEST(TrainerFaults, FullDiskStopsEveryRankWithTheError) {
  paisoar::testing::TempDir dir("trainer_faults");
  FullDisk disk;
  auto c = tiny_config(dir / "run");
  c.checkpoint.dir = dir / "small/ckpt";
  c.checkpoint.on_error = paisoar::train::OnCheckpointError::Stop;
  const auto outcomes = fit_on_two_ranks(c);
  EXPECT_FALSE(outcomes[0].finished);
  EXPECT_FALSE(outcomes[1].finished);
  EXPECT_TRUE(contains(outcomes[0].error, "step-000000000001.safetensors")) << outcomes[0].error;
  EXPECT_TRUE(contains(outcomes[0].error, "No space left on device")) << outcomes[0].error;
  EXPECT_TRUE(contains(outcomes[0].error, "checkpoint.on_error: warn")) << outcomes[0].error;
  EXPECT_TRUE(contains(outcomes[1].error, "the checkpoint of step 1 was not written")) << outcomes[1].error;
}

TEST(TrainerFaults, FullDiskUnderWarnFinishesTheRun) {
  paisoar::testing::TempDir dir("trainer_faults");
  FullDisk disk;
  auto c = tiny_config(dir / "run");
  c.checkpoint.dir = dir / "small/ckpt";
  c.checkpoint.on_error = paisoar::train::OnCheckpointError::Warn;
  ::testing::internal::CaptureStderr();
  const auto outcomes = fit_on_two_ranks(c);
  const std::string err = ::testing::internal::GetCapturedStderr();
  for (const auto& o : outcomes) {
    EXPECT_TRUE(o.finished) << o.error;
    EXPECT_EQ(o.steps, 2);
  }
  EXPECT_TRUE(contains(err, "warning: the checkpoint of step 1 was not written")) << err;
  EXPECT_TRUE(contains(err, "No space left on device")) << err;
  for (const auto& e : std::filesystem::directory_iterator(dir / "small/ckpt")) {
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << "a partial file is left: " << e.path();
  }
}

// A crash in the middle of a save on a disk in memory (rank 1's ZeRO-2 shard
// written but never renamed; rank 0's step file torn): every rank stops; a
// restart on the same disk resumes from the checkpoint before, naming a
// damaged newer one, and ends with the uninterrupted run's parameters.
TEST(TrainerFaults, ACrashInTheMiddleOfASaveResumesFromTheCheckpointBefore) {
  using format::FileFault;
  struct Case {
    FileFault::Kind kind;
    const char* file;
    bool named;  // the restart warns about the damaged checkpoint
  };
  const std::string root = "/paisoar-memory-disk";
  for (const Case& k : {Case{FileFault::Kind::CrashBeforeRename, "zero-000000000002/zero-1-of-2", false},
                        Case{FileFault::Kind::TornFile, "step-000000000002", true}}) {
    SCOPED_TRACE(k.file);
    paisoar::testing::TempDir dir("trainer_faults");
    auto c = tiny_config(dir / "run");
    c.zero.stage = 2;
    c.train.epochs = 2;  // 4 steps, a checkpoint after each
    c.checkpoint.dir = root + "/ckpt";
    train::RunEnvironment uninterrupted;
    uninterrupted.checkpoint_files = format::memory_file_system();
    const auto reference = paisoar::testing::train_with(c, 2, nullptr, paisoar::testing::DataSource::Synthetic,
                                                        nullptr, uninterrupted);

    auto disk = format::memory_file_system();
    train::RunEnvironment crashing;
    auto faulty = std::make_shared<format::FaultyFileSystem>(disk, FileFault{k.kind, k.file, 0, 0});
    crashing.checkpoint_files = faulty;
    ::testing::internal::CaptureStderr();
    const auto outcomes = fit_on_two_ranks(c, nullptr, paisoar::testing::test_options(), crashing);
    ::testing::internal::GetCapturedStderr();
    EXPECT_TRUE(faulty->crashed());
    for (const auto& o : outcomes) {
      EXPECT_FALSE(o.finished);
      EXPECT_TRUE(contains(o.error, "the checkpoint of step 2 was not written")) << o.error;
    }

    train::RunEnvironment restarted;
    restarted.checkpoint_files = disk;
    ::testing::internal::CaptureStderr();
    const auto resumed = paisoar::testing::train_with(c, 2, nullptr, paisoar::testing::DataSource::Synthetic,
                                                      nullptr, restarted);
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(resumed.second.resumed_from, c.checkpoint.dir + "/step-000000000001.safetensors");
    EXPECT_EQ(resumed.second.global_step, 4);
    EXPECT_EQ(contains(err, "skipping checkpoint '" + c.checkpoint.dir + "/step-000000000002.safetensors'"), k.named)
        << err;
    paisoar::testing::expect_close(resumed.first, reference.first, 1e-6);
    EXPECT_FALSE(std::filesystem::exists(root));
  }
}

TEST(TrainerFaults, StalledRankIsNamedByTheRankThatTimesOut) {
  paisoar::testing::TempDir dir("trainer_faults");
  auto c = tiny_config(dir / "run");
  c.data.train_limit = 256;  // 4 steps
  c.checkpoint.every_steps = 0;
  comm::CommOptions options;
  options.timeout = std::chrono::milliseconds(1500);
  // Rank 1 stalls after its first step (as a SIGSTOPped or stuck process would)
  // for longer than the timeout; rank 0 waits for it in step 1's allreduce.
  const auto outcomes = fit_on_two_ranks(
      c,
      [](int rank, int64_t step) {
        if (rank == 1 && step == 1) std::this_thread::sleep_for(std::chrono::milliseconds(4000));
      },
      options);
  EXPECT_FALSE(outcomes[0].finished);
  EXPECT_FALSE(outcomes[1].finished) << "rank 1 finds its peer gone when it wakes";
  EXPECT_TRUE(contains(outcomes[0].error, "timed out after 1500 ms")) << outcomes[0].error;
  EXPECT_TRUE(contains(outcomes[0].error, "this rank (0) was at step 1; behind it: rank 1 (last started step 0)"))
      << outcomes[0].error;
}

TEST(TrainerFaults, CheckpointWithDamagedMetadataIsNamed) {
  paisoar::testing::TempDir dir("trainer_faults");
  auto c = tiny_config(dir / "run");
  c.checkpoint.dir = dir / "ckpt";
  // Intact as a file (its CRCs match), but its step is not a number.
  std::filesystem::create_directories(dir / "ckpt");
  format::save_safetensors(dir / "ckpt/step-000000000001.safetensors", {{"x", torch::zeros({1})}},
                               {{"train.step", "1x"}, {"train.loader_epoch", "0"}, {"train.loader_batch", "0"}});
  const auto outcomes = fit_on_two_ranks(c);
  for (const auto& o : outcomes) {
    EXPECT_FALSE(o.finished);
    EXPECT_TRUE(contains(o.error, "step-000000000001.safetensors: metadata 'train.step' is '1x', not an integer"))
        << o.error;
  }
}
