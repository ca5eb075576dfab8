// CheckpointManager over FaultyFileSystem on an in-memory disk: a full disk,
// an fsync error, a crash between the write and the rename, and a torn file
// each leave the previous checkpoint usable, and a restarted manager (a new
// one over the same disk) cleans up and resumes from it, naming what it
// skipped. No privileges, no mount, nothing on the real disk.
#include "paisoar/checkpoint/checkpoint_manager.h"
#include "tests/support/faulty_file_system.h"

#include "tests/support/expect_error.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>

namespace paisoar::checkpoint {
namespace {

using format::FileFault;
using testing::expect_error;

const std::string kMemoryDir = "/paisoar-memory-checkpoints/run";

format::TensorMap filled_tensors(int64_t step) {
  return {{"w", torch::full({256, 256}, static_cast<float>(step))}};  // 256 KiB
}

CheckpointOptions options_on(std::shared_ptr<format::FileSystem> fs) {
  CheckpointOptions options;
  options.dir = kMemoryDir;
  options.keep_last = 3;
  options.file_system = std::move(fs);
  return options;
}

// A disk holding the checkpoint of step 1, and a faulty view of it whose
// fault hits the file of step 2.
struct Disk {
  explicit Disk(FileFault::Kind kind, uint64_t bytes = 0) {
    CheckpointManager(options_on(disk)).save(1, filled_tensors(1));
    faulty = std::make_shared<format::FaultyFileSystem>(disk, FileFault{kind, "step-000000000002", 0, bytes});
  }
  std::shared_ptr<format::FileSystem> disk = format::memory_file_system();
  std::shared_ptr<format::FaultyFileSystem> faulty;
};

// What a restarted process finds: the newest usable checkpoint's step and
// its tensor, and what it said on stderr.
struct Restart {
  int64_t step = -1;
  float value = 0;
  std::string warnings;
};
Restart restart_on(const std::shared_ptr<format::FileSystem>& disk) {
  ::testing::internal::CaptureStderr();
  CheckpointManager manager(options_on(disk));
  const auto loaded = manager.load_latest();
  Restart r;
  r.warnings = ::testing::internal::GetCapturedStderr();
  if (loaded) {
    r.step = loaded->step;
    r.value = loaded->checkpoint.tensors.at("w")[0][0].item<float>();
  }
  return r;
}

bool has_temporary(format::FileSystem& fs) {
  const auto names = fs.list(kMemoryDir);
  return std::any_of(names.begin(), names.end(), [](const auto& n) { return n.find(".tmp.") != std::string::npos; });
}

TEST(CheckpointFileSystem, InMemoryCheckpointsPruneAndResumeWithoutTouchingTheDisk) {
  auto fs = format::memory_file_system();
  {
    CheckpointManager manager(options_on(fs));
    for (int64_t step = 1; step <= 5; ++step) manager.save(step, filled_tensors(step));
    EXPECT_EQ(manager.list().size(), 3u);
  }
  const Restart r = restart_on(fs);
  EXPECT_EQ(r.step, 5);
  EXPECT_EQ(r.value, 5.0f);
  EXPECT_FALSE(std::filesystem::exists("/paisoar-memory-checkpoints"));
}

TEST(CheckpointFileSystem, ASecondWriterOfTheDirectoryIsRefused) {
  auto fs = format::memory_file_system();
  CheckpointManager first(options_on(fs));
  expect_error([&] { CheckpointManager second(options_on(fs)); }, {kMemoryDir.c_str(), "in use by another job"});
}

TEST(CheckpointFileSystem, AFullDiskIsNamedAndKeepsThePreviousCheckpoint) {
  Disk d(FileFault::Kind::NoSpace, 64 * 1024);
  {
    CheckpointManager manager(options_on(d.faulty));
    expect_error([&] { manager.save(2, filled_tensors(2)); },
                 {"step-000000000002.safetensors", "No space left on device"});
  }
  EXPECT_FALSE(has_temporary(*d.disk));  // the partial write is gone
  const Restart r = restart_on(d.disk);
  EXPECT_EQ(r.step, 1);
  EXPECT_EQ(r.value, 1.0f);
  EXPECT_EQ(r.warnings, "");
}

TEST(CheckpointFileSystem, AnFsyncErrorIsNamedAndKeepsThePreviousCheckpoint) {
  Disk d(FileFault::Kind::SyncError);
  {
    CheckpointManager manager(options_on(d.faulty));
    expect_error([&] { manager.save(2, filled_tensors(2)); },
                 {"step-000000000002.safetensors", "fsync failed", "Input/output error"});
  }
  EXPECT_FALSE(has_temporary(*d.disk));
  EXPECT_EQ(restart_on(d.disk).step, 1);
}

TEST(CheckpointFileSystem, ACrashBeforeTheRenameLeavesATemporaryTheRestartRemoves) {
  Disk d(FileFault::Kind::CrashBeforeRename);
  {
    CheckpointManager manager(options_on(d.faulty));
    EXPECT_THROW(manager.save(2, filled_tensors(2)), format::SimulatedCrash);
    EXPECT_THROW(manager.save(3, filled_tensors(3)), format::SimulatedCrash);  // the process is gone
  }
  EXPECT_TRUE(d.faulty->crashed());
  EXPECT_TRUE(has_temporary(*d.disk));  // the complete write, never renamed
  const Restart r = restart_on(d.disk);
  EXPECT_EQ(r.step, 1);
  EXPECT_EQ(r.value, 1.0f);
  EXPECT_EQ(r.warnings, "");  // a temporary is never taken for a checkpoint
  EXPECT_FALSE(has_temporary(*d.disk));
}

TEST(CheckpointFileSystem, ATornFileIsNamedAndSkipped) {
  for (const uint64_t kept : {uint64_t{0}, uint64_t{5}, uint64_t{200}}) {  // half the file; inside the header
    Disk d(FileFault::Kind::TornFile, kept);
    {
      CheckpointManager manager(options_on(d.faulty));
      EXPECT_THROW(manager.save(2, filled_tensors(2)), format::SimulatedCrash);
    }
    const Restart r = restart_on(d.disk);
    EXPECT_EQ(r.step, 1) << kept;
    EXPECT_EQ(r.value, 1.0f);
    EXPECT_NE(r.warnings.find("skipping checkpoint '" + kMemoryDir + "/step-000000000002.safetensors'"), std::string::npos)
        << r.warnings;
    EXPECT_NE(r.warnings.find("falling back to '" + kMemoryDir + "/step-000000000001.safetensors'"), std::string::npos)
        << r.warnings;
  }
}

TEST(CheckpointFileSystem, TheFaultSparesOtherFilesAndTheFirstSkipped) {
  auto disk = format::memory_file_system();
  auto faulty = std::make_shared<format::FaultyFileSystem>(
      disk, FileFault{FileFault::Kind::SyncError, "step-", /*skip=*/2, 0});
  {
    CheckpointManager manager(options_on(faulty));
    manager.save(1, filled_tensors(1));
    manager.save(2, filled_tensors(2));
    expect_error([&] { manager.save(3, filled_tensors(3)); }, {"step-000000000003.safetensors", "fsync failed"});
  }
  EXPECT_EQ(faulty->hits(), 1);
  EXPECT_EQ(restart_on(disk).step, 2);
}

}  // namespace
}  // namespace paisoar::checkpoint
