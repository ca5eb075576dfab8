// CheckpointManager: naming, due(), keep_last pruning, rank != 0 writing
// nothing, resume from the newest intact file (a damaged or truncated newest
// one is skipped with a warning naming it), leftovers of a crashed save
// ignored and cleaned, and unwritable directories refused up front.
#include "paisoar/checkpoint/checkpoint_manager.h"
#include "src/util/fault_point.h"

#include "tests/support/expect_error.h"
#include "tests/support/file_bytes.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <sys/stat.h>
#include <torch/torch.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace paisoar::checkpoint {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::TempDir;

format::TensorMap tensors_for(int64_t step) { return {{"w", torch::full({3, 3}, static_cast<float>(step))}}; }

std::vector<int64_t> steps_of(const CheckpointManager& manager) {
  std::vector<int64_t> steps;
  for (const auto& f : manager.list()) steps.push_back(f.step);
  return steps;
}

TEST(CheckpointManager, DueEveryNSteps) {
  TempDir dir("ckpt");
  CheckpointManager every3({dir.path(), 3});
  EXPECT_FALSE(every3.due(0));
  EXPECT_FALSE(every3.due(2));
  EXPECT_TRUE(every3.due(3));
  EXPECT_TRUE(every3.due(9));
  CheckpointManager never({dir / "other"});
  EXPECT_FALSE(never.due(3));
}

// A second writer of one directory (another job, or another manager) is
// refused while the first lives, naming the directory and the holder; once
// the first is gone (or its process died: the kernel drops the flock) the
// directory is free again. Readers (rank != 0) take no lock.
TEST(CheckpointManager, ADirectoryHasOneWriterAtATime) {
  TempDir dir("ckpt");
  {
    CheckpointManager first({dir.path()});
    const std::string holder = "process " + std::to_string(::getpid());
    expect_error([&] { CheckpointManager second({dir.path()}); },
                 {dir.path().c_str(), "in use by another job", holder.c_str(), "its own checkpoint.dir"});
    CheckpointManager reader({dir.path(), 0, 3, /*rank=*/1});
  }
  CheckpointManager again({dir.path()});
}

TEST(CheckpointManager, SavesNamedFilesAndKeepsTheNewest) {
  TempDir dir("ckpt");
  CheckpointManager manager({dir / "run", 1, 3});  // created if missing
  for (int64_t step = 1; step <= 5; ++step) manager.save(step * 10, tensors_for(step * 10), {{"epoch", "0"}});
  EXPECT_EQ(steps_of(manager), (std::vector<int64_t>{30, 40, 50}));
  EXPECT_TRUE(fs::exists(dir / "run/step-000000000050.safetensors"));
  // The three step files and the directory's lock.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "run"), fs::directory_iterator{}), 4);
  EXPECT_TRUE(fs::exists(dir / "run/.paisoar-lock"));

  const auto loaded = manager.load_latest();
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 50);
  EXPECT_EQ(loaded->checkpoint.source, dir / "run/step-000000000050.safetensors");
  EXPECT_EQ(loaded->checkpoint.metadata.at("paisoar.step"), "50");
  EXPECT_EQ(loaded->checkpoint.metadata.at("epoch"), "0");
  EXPECT_TRUE(torch::equal(loaded->checkpoint.tensors.at("w"), tensors_for(50).at("w")));
}

TEST(CheckpointManager, OnlyRankZeroWrites) {
  TempDir dir("ckpt");
  CheckpointManager rank1({dir.path(), 1, 3, 1});
  rank1.save(1, tensors_for(1));
  EXPECT_TRUE(rank1.list().empty());
  EXPECT_FALSE(rank1.load_latest().has_value());
  CheckpointManager rank0({dir.path(), 1, 3, 0});
  rank0.save(2, tensors_for(2));
  EXPECT_EQ(rank1.load_latest()->step, 2);  // every rank reads
}

void expect_fallback(const std::function<void(const std::string&)>& damage) {
  TempDir dir("ckpt");
  CheckpointManager manager({dir.path(), 1, 0});
  for (int64_t step : {1, 2, 3}) manager.save(step, tensors_for(step));
  const std::string newest = dir / "step-000000000003.safetensors";
  damage(newest);
  ::testing::internal::CaptureStderr();
  const auto loaded = manager.load_latest();
  const std::string warning = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->step, 2);
  EXPECT_TRUE(torch::equal(loaded->checkpoint.tensors.at("w"), tensors_for(2).at("w")));
  EXPECT_NE(warning.find(newest), std::string::npos) << warning;
  EXPECT_NE(warning.find("step-000000000002.safetensors"), std::string::npos) << warning;
}

TEST(CheckpointManager, CorruptNewestFallsBackWithAWarning) {
  expect_fallback([](const std::string& path) {
    std::string bytes = testing::read_file_bytes(path);
    bytes[bytes.size() - 3] ^= 1;
    testing::write_file_bytes(path, bytes);
  });
}

TEST(CheckpointManager, TruncatedNewestFallsBackWithAWarning) {
  expect_fallback([](const std::string& path) { fs::resize_file(path, fs::file_size(path) / 2); });
}

TEST(CheckpointManager, CrashedSaveLeavesNothingThatLoads) {
  TempDir dir("ckpt");
  {
    CheckpointManager manager({dir.path()});
    manager.save(1, tensors_for(1));
    // What a save killed before its rename leaves: a partial temporary.
    const std::string whole = testing::read_file_bytes(dir / "step-000000000001.safetensors");
    testing::write_file_bytes(dir / "step-000000000002.safetensors.tmp.999.0", whole.substr(0, whole.size() / 2));
    EXPECT_EQ(steps_of(manager), (std::vector<int64_t>{1}));
    EXPECT_EQ(manager.load_latest()->step, 1);
  }
  CheckpointManager restarted({dir.path()});  // cleans the leftover
  EXPECT_FALSE(fs::exists(dir / "step-000000000002.safetensors.tmp.999.0"));
  // A save whose directory vanished throws and leaves no file behind.
  CheckpointManager doomed({dir / "gone"});
  fs::remove_all(dir / "gone");
  expect_error([&] { doomed.save(3, tensors_for(3)); }, {"gone"});
  EXPECT_FALSE(fs::exists(dir / "gone"));
  EXPECT_EQ(restarted.load_latest()->step, 1);
}

TEST(CheckpointManager, AllDamagedIsAnError) {
  TempDir dir("ckpt");
  CheckpointManager manager({dir.path()});
  manager.save(1, tensors_for(1));
  testing::write_file_bytes(dir / "step-000000000001.safetensors", "junk");
  ::testing::internal::CaptureStderr();
  expect_error([&] { manager.load_latest(); }, {dir.path().c_str(), "remove them"});
  ::testing::internal::GetCapturedStderr();
}

TEST(CheckpointManager, UnwritableDirectoryIsRefused) {
  // Under a regular file: no one, not even root, can create it.
  expect_error([] { CheckpointManager({"/etc/hostname/ckpt"}); }, {"/etc/hostname/ckpt"});
  expect_error([] { CheckpointManager({""}); }, {"options.dir"});
  // A directory the process may not write to (EACCES, injected: root could
  // write through a mode of 0500).
  TempDir dir("ckpt");
  util::install_fault_injector(std::make_unique<util::FailAtPoint>("atomic_file.open", EACCES));
  expect_error([&] { CheckpointManager({dir.path()}); }, {dir.path().c_str(), "not writable", "Permission denied"});
  util::install_fault_injector(nullptr);
}

}  // namespace
}  // namespace paisoar::checkpoint
