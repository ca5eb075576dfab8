// checkpoint.async end to end with thread-ranks: the background writer
// writes the checkpoints a synchronous run writes (the same steps, and a
// resume from them is bit for bit the uninterrupted run, with DDP and with
// ZeRO-2); training is not changed by it; and a write that fails in the
// background stops the run at the next save (checkpoint.on_error: stop) or is
// warned about (warn), naming the step, with the previous checkpoint intact.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "paisoar/train/trainer.h"
#include "src/util/fault_point.h"
#include "tests/support/expect_error.h"
#include "tests/train/train_support.h"

using namespace paisoar;
using paisoar::testing::expect_error_of;
using paisoar::testing::small_config;
using paisoar::testing::train_with;

namespace {

train::TrainConfig async_config(const std::string& run_dir, int64_t zero_stage) {
  auto c = small_config();
  c.run_dir = run_dir;
  c.model.name = "mlp";
  c.optimizer.name = "adamw";
  c.optimizer.lr = 0.002;
  c.train.epochs = 2;  // 20 steps
  c.eval.every_epochs = 0;
  c.profiler.enabled = false;
  c.checkpoint.every_steps = 3;
  c.checkpoint.keep_last = 10;
  c.checkpoint.resume = true;
  c.checkpoint.async = true;
  c.zero.stage = zero_stage;
  return c;
}

std::vector<std::string> step_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("step-", 0) == 0) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void expect_equal(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i;
}

// Throws at the n-th checkpoint file created (AtomicFile's fault point), as
// a full disk would; the one before and after are written.
class FailNthFile : public util::FaultInjector {
 public:
  explicit FailNthFile(int n) : n_(n) {}
  void reached(const char* point, int64_t) override {
    if (std::string(point) == "atomic_file.created" && ++seen_ == n_) {
      C10_THROW_ERROR(Error, "injected: No space left on device");
    }
  }

 private:
  const int n_;
  std::atomic<int> seen_{0};
};

}  // namespace

TEST(TrainerAsyncSave, WritesWhatASynchronousRunWritesAndResumesExactly) {
  for (int64_t stage : {0, 2}) {
    SCOPED_TRACE("zero.stage " + std::to_string(stage));
    const std::string base = ::testing::TempDir() + "paisoar_async_" + std::to_string(::getpid());
    std::filesystem::remove_all(base);
    auto sync = async_config(base + "/sync", stage);
    sync.checkpoint.async = false;
    const auto synchronous = train_with(sync, 2).first;
    const auto straight = train_with(async_config(base + "/async", stage), 2).first;
    expect_equal(synchronous, straight);
    EXPECT_EQ(step_files(base + "/sync/checkpoints"), step_files(base + "/async/checkpoints"));

    const auto c = async_config(base + "/resumed", stage);
    EXPECT_THROW(train_with(c, 2, [](int64_t step) {
                   if (step == 8) throw std::runtime_error("simulated crash");
                 }),
                 std::runtime_error);
    const auto [resumed, result] = train_with(c, 2);
    EXPECT_NE(result.resumed_from.find("step-000000000006"), std::string::npos) << result.resumed_from;
    expect_equal(straight, resumed);
    std::filesystem::remove_all(base);
  }
}

TEST(TrainerAsyncSave, AFailedBackgroundWriteStopsTheRunAtTheNextSave) {
  const std::string base = ::testing::TempDir() + "paisoar_async_fail_" + std::to_string(::getpid());
  std::filesystem::remove_all(base);
  auto c = async_config(base, 0);
  c.train.epochs = 1;  // saves at 3, 6, 9 and 10 (the end)
  util::install_fault_injector(std::make_unique<FailNthFile>(3));  // the write probe, step 3's, step 6's
  expect_error_of<std::runtime_error>([&] { train_with(c, 1); },
                                      {"the checkpoint of step 6 was not written", "No space left on device",
                                       "checkpoint.on_error: warn"});
  util::install_fault_injector(nullptr);
  EXPECT_EQ(step_files(base + "/checkpoints"), (std::vector<std::string>{"step-000000000003.safetensors"}));

  // Under checkpoint.on_error: warn the run goes on, and says which step it lacks.
  std::filesystem::remove_all(base);
  c.checkpoint.on_error = train::OnCheckpointError::Warn;
  util::install_fault_injector(std::make_unique<FailNthFile>(3));
  ::testing::internal::CaptureStderr();
  const auto result = train_with(c, 1).second;
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  util::install_fault_injector(nullptr);
  EXPECT_EQ(result.global_step, 10);
  EXPECT_NE(warnings.find("the checkpoint of step 6 was not written"), std::string::npos) << warnings;
  EXPECT_EQ(step_files(base + "/checkpoints"),
            (std::vector<std::string>{"step-000000000003.safetensors", "step-000000000009.safetensors",
                                      "step-000000000010.safetensors"}));
  std::filesystem::remove_all(base);
}
