// Storage faults while checkpointing. A process killed with SIGKILL at each
// stage of writing a checkpoint (temporary created, length word written,
// header written, first tensor written, fsynced but not renamed, renamed):
// the newest checkpoint that loads is the previous one until the rename and
// the new one after it, no file in the directory is corrupt, and the next
// manager removes the temporary. A full disk (writes past 64 KiB fail with
// ENOSPC), an fsync that fails with EIO and a directory that cannot be
// created are clear errors naming the path; none needs privileges.
#include "paisoar/checkpoint/checkpoint_manager.h"
#include "paisoar/format/safetensors.h"

#include "src/util/fault_point.h"
#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

namespace paisoar::checkpoint {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::TempDir;

// The same shapes at every step, so every step's file has the same layout.
format::TensorMap state_at(int64_t step) {
  torch::manual_seed(step);
  return {{"b", torch::randn({32})}, {"w", torch::randn({64, 32})}, {"n", torch::full({4}, step, torch::kInt64)}};
}

CheckpointOptions options_for(const std::string& dir) { return {dir, 1, 3, 0}; }

uint64_t header_end(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char length[8];
  in.read(reinterpret_cast<char*>(length), 8);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{length[i]} << (8 * i);
  return 8 + n;
}

std::vector<std::string> temporaries(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) found.push_back(e.path().string());
  }
  return found;
}

TEST(CheckpointFaults, KillDuringASaveKeepsThePreviousCheckpoint) {
  ::testing::FLAGS_gtest_death_test_style = "fast";  // fork at the statement: the directory is shared
  TempDir dir("ckpt_kill");
  const std::string ckpt = dir / "ckpt";
  // Where step 2's file has its header and its first tensor (largest element
  // size first, then by name: n (I64), then b (F32)), from a dry run.
  {
    CheckpointManager dry(options_for(dir / "dry"));
    dry.save(2, state_at(2));
  }
  const uint64_t header = header_end(dir / "dry/step-000000000002.safetensors");
  struct Case {
    std::string fault;
    int64_t survivor;  // the step load_latest must find afterwards
  };
  const std::vector<Case> cases = {{"atomic_file.created", 1},
                                   {"atomic_file.written:8", 1},
                                   {"atomic_file.written:" + std::to_string(header), 1},
                                   {"atomic_file.written:" + std::to_string(header + 4 * 8), 1},
                                   {"atomic_file.synced", 1},
                                   {"atomic_file.renamed", 2}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.fault);
    fs::remove_all(ckpt);
    CheckpointManager(options_for(ckpt)).save(1, state_at(1));
    EXPECT_EXIT(
        {
          CheckpointManager manager(options_for(ckpt));  // its write probe is before the fault is armed
          util::install_fault_injector(util::fault_injector_from_env({{"PAISOAR_TEST_FAULT", c.fault}}));
          manager.save(2, state_at(2));
          std::_Exit(0);  // reached only if the fault did not fire
        },
        ::testing::KilledBySignal(SIGKILL), "");
    if (c.survivor == 1) EXPECT_EQ(temporaries(ckpt).size(), 1u) << "the kill should leave the temporary";
    // Every file that claims to be a checkpoint is intact: no corrupt "latest".
    const CheckpointManager after(options_for(ckpt));
    EXPECT_TRUE(temporaries(ckpt).empty());
    for (const CheckpointFile& f : after.list()) EXPECT_NO_THROW(format::load_safetensors(f.path)) << f.path;
    const auto latest = after.load_latest();
    ASSERT_TRUE(latest.has_value());
    EXPECT_EQ(latest->step, c.survivor);
    for (const auto& [name, t] : state_at(c.survivor)) {
      EXPECT_TRUE(torch::equal(latest->checkpoint.tensors.at(name), t)) << name;
    }
  }
}

TEST(CheckpointFaults, TheEnvironmentsFaultIsInertAfterARestartAndOnOtherRanks) {
  using Env = std::map<std::string, std::string>;
  const std::string fault = "atomic_file.synced";
  EXPECT_EQ(util::fault_injector_from_env(Env{}), nullptr);
  EXPECT_NE(util::fault_injector_from_env(Env{{"PAISOAR_TEST_FAULT", fault}}), nullptr);
  EXPECT_NE(util::fault_injector_from_env(Env{{"PAISOAR_TEST_FAULT", fault}, {"PAISOAR_RESTART_COUNT", "0"}}),
            nullptr);
  EXPECT_EQ(util::fault_injector_from_env(Env{{"PAISOAR_TEST_FAULT", fault}, {"PAISOAR_RESTART_COUNT", "1"}}),
            nullptr);
  EXPECT_EQ(util::fault_injector_from_env(
                Env{{"PAISOAR_TEST_FAULT", fault}, {"PAISOAR_TEST_FAULT_RANK", "1"}, {"RANK", "0"}}),
            nullptr);
  EXPECT_NE(util::fault_injector_from_env(
                Env{{"PAISOAR_TEST_FAULT", fault}, {"PAISOAR_TEST_FAULT_RANK", "1"}, {"RANK", "1"}}),
            nullptr);
  paisoar::testing::expect_error_of<c10::ValueError>(
      [] { util::fault_injector_from_env(Env{{"PAISOAR_TEST_FAULT", "train.step:five"}}); },
      {"PAISOAR_TEST_FAULT='train.step:five'", "must be an integer"});
}

TEST(CheckpointFaults, AnInjectorAtAnotherIndexLetsTheSaveThrough) {
  ::testing::FLAGS_gtest_death_test_style = "fast";
  TempDir dir("ckpt_kill");
  EXPECT_EXIT(
      {
        CheckpointManager manager(options_for(dir / "a"));
        util::install_fault_injector(std::make_unique<util::KillAtPoint>("atomic_file.written", -5));
        manager.save(1, state_at(1));
        std::_Exit(7);
      },
      ::testing::ExitedWithCode(7), "");
  EXPECT_EQ(CheckpointManager(options_for(dir / "a")).list().size(), 1u);
}

// The disk fills after 64 KiB (every write(2) that would take a file past
// it fails with ENOSPC, as on a full file system; no mount needed).
TEST(CheckpointFaults, FullDiskIsAClearErrorAndKeepsThePreviousCheckpoint) {
  TempDir dir("ckpt_full");
  CheckpointManager manager(options_for(dir / "ckpt"));
  util::install_fault_injector(std::make_unique<util::FailAtPoint>("atomic_file.write", ENOSPC, 64 * 1024));
  manager.save(1, state_at(1));  // about 9 KiB
  format::TensorMap big = state_at(2);
  big["w"] = torch::randn({256, 128});  // 128 KiB: does not fit
  expect_error([&] { manager.save(2, big); }, {"step-000000000002.safetensors", "No space left on device"});
  util::install_fault_injector(nullptr);
  EXPECT_TRUE(temporaries(dir / "ckpt").empty()) << "the failed write's temporary is removed";
  const auto latest = manager.load_latest();
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->step, 1);
}

// fsync(2) fails with EIO (a failing disk): the save is an error naming the
// file, nothing is renamed into place, and the previous checkpoint stays.
TEST(CheckpointFaults, AnIoErrorOnFsyncKeepsThePreviousCheckpoint) {
  TempDir dir("ckpt_eio");
  CheckpointManager manager(options_for(dir / "ckpt"));
  manager.save(1, state_at(1));
  util::install_fault_injector(std::make_unique<util::FailAtPoint>("atomic_file.fsync", EIO));
  expect_error([&] { manager.save(2, state_at(2)); },
               {"step-000000000002.safetensors", "fsync failed", "Input/output error"});
  util::install_fault_injector(nullptr);
  EXPECT_TRUE(temporaries(dir / "ckpt").empty());
  EXPECT_FALSE(fs::exists(dir / "ckpt/step-000000000002.safetensors"));
  EXPECT_EQ(manager.load_latest()->step, 1);
}

// The launcher's tests ask for a failing disk through the environment.
TEST(CheckpointFaults, TheEnvironmentAsksForAFailingSystemCall) {
  using Env = std::map<std::string, std::string>;
  TempDir dir("ckpt_env");
  CheckpointManager manager(options_for(dir / "ckpt"));
  util::install_fault_injector(util::fault_injector_from_env(Env{{"PAISOAR_TEST_FAULT", "atomic_file.write:16=ENOSPC"}}));
  expect_error([&] { manager.save(1, state_at(1)); }, {"step-000000000001.safetensors", "No space left on device"});
  util::install_fault_injector(nullptr);
  expect_error([] { util::fault_injector_from_env(Env{{"PAISOAR_TEST_FAULT", "atomic_file.write=EBUSY"}}); },
               {"PAISOAR_TEST_FAULT='atomic_file.write=EBUSY'", "ENOSPC, EIO or STALL"});
}

TEST(CheckpointFaults, DirectoryThatCannotBeCreatedIsNamed) {
  TempDir dir("ckpt_bad");
  std::ofstream(dir / "plain_file") << "x";
  expect_error([&] { CheckpointManager(options_for(dir / "plain_file/ckpt")); },
               {"plain_file/ckpt", "cannot create"});
}

}  // namespace
}  // namespace paisoar::checkpoint
